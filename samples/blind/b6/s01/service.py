"""Support-ticket intent classifier (FastAPI + small BERT, tokenizer trained at start-up)."""
import os
import re
import signal
import threading
import time
import unicodedata

import numpy as np
import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18401"))
CLEAN_MODE = os.environ.get("SVC_CLEAN", "python")
torch.set_num_threads(1)
torch.manual_seed(0)


def _lifetime():
    t = float(os.environ.get("SVC_LIFETIME", "120"))
    time.sleep(t)
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()

WORDS = ("refund order delivery late broken account password reset invoice charge card "
         "shipping address cancel subscription upgrade plan support ticket agent wait error "
         "login app crash update payment failed bank transfer discount coupon code").split()
rng = np.random.default_rng(0)
corpus = [" ".join(rng.choice(WORDS, size=30)) for _ in range(3000)]

tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.train_from_iterator(corpus, trainers.WordPieceTrainer(vocab_size=2000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
tok.enable_truncation(128)

cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                 intermediate_size=256, max_position_embeddings=160, num_labels=6)
model = BertForSequenceClassification(cfg).eval()
N_HASH = 4096
head_w = rng.standard_normal((N_HASH, 6)).astype(np.float32) * 0.01

_ws = re.compile(r"\s+")
_strip_tbl = {c: None for c in range(0x300, 0x370)}
_keep = set("abcdefghijklmnopqrstuvwxyz0123456789 ")


def clean_text(text):
    if CLEAN_MODE == "python":
        out = []
        for ch in unicodedata.normalize("NFKD", text):
            if unicodedata.combining(ch):
                continue
            ch = ch.lower()
            if ch in _keep:
                out.append(ch)
            elif unicodedata.category(ch).startswith("P") or ch.isspace():
                out.append(" ")
        s = "".join(out)
        return " ".join(s.split())
    s = unicodedata.normalize("NFKD", text).translate(_strip_tbl).lower()
    return _ws.sub(" ", re.sub(r"[^a-z0-9\s]+", " ", s)).strip()


def char_ngrams(s):
    if CLEAN_MODE == "python":
        feats = [0.0] * N_HASH
        for n in (2, 3, 4, 5, 6):
            for i in range(len(s) - n + 1):
                h = 0
                for c in s[i:i + n]:
                    h = (h * 31 + ord(c)) & 0xFFFFFFFF
                feats[h % N_HASH] += 1.0
        v = np.array(feats, dtype=np.float32)
    else:
        b = np.frombuffer(s.encode(), dtype=np.uint8).astype(np.uint64)
        v = np.zeros(N_HASH, dtype=np.float32)
        for n in (2, 3, 4, 5, 6):
            if len(b) < n:
                continue
            h = np.zeros(len(b) - n + 1, dtype=np.uint64)
            for k in range(n):
                h = (h * np.uint64(31) + b[k:len(b) - n + 1 + k]) & np.uint64(0xFFFFFFFF)
            v += np.bincount((h % np.uint64(N_HASH)).astype(np.int64), minlength=N_HASH).astype(np.float32)
    return v / (np.linalg.norm(v) + 1e-6)


class Ticket(BaseModel):
    text: str


app = FastAPI()


@app.post("/predict")
def predict(t: Ticket):
    s = clean_text(t.text)
    feats = char_ngrams(s)
    enc = tok.encode(s)
    ids = torch.tensor([enc.ids])
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[0].numpy()
    logits = logits + feats @ head_w
    return {"intent": int(np.argmax(logits)), "scores": logits.round(4).tolist()}


if __name__ == "__main__":
    import uvicorn
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
