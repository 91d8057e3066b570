"""Sentence encoder service: tokenises text and returns a pooled embedding."""
import os
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import BertConfig, BertModel

PORT = int(os.environ.get("SVC_PORT", "18851"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
LAYERS = int(os.environ.get("SVC_LAYERS", "8"))
MAX_LEN = 96

torch.set_num_threads(1)
torch.manual_seed(0)


def build_vocab():
    cons = "bcdfghjklmnprstvz"
    vows = "aeiou"
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
    for c1 in cons:
        for v1 in vows:
            for c2 in cons:
                words.append(c1 + v1 + c2)
                words.append("##" + c1 + v1 + c2)
    return {w: i for i, w in enumerate(words)}


VOCAB = build_vocab()
tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.enable_truncation(MAX_LEN - 2)

cfg = BertConfig(vocab_size=len(VOCAB), hidden_size=384, num_hidden_layers=LAYERS,
                 num_attention_heads=6, intermediate_size=1536, max_position_embeddings=128)
model = BertModel(cfg).eval()

app = FastAPI()


class Req(BaseModel):
    text: str


@app.post("/embed")
def embed(req: Req):
    ids = tok.encode(req.text).ids
    ids = [VOCAB["[CLS]"]] + ids + [VOCAB["[SEP]"]]
    x = torch.tensor([ids])
    with torch.inference_mode():
        out = model(input_ids=x).last_hidden_state
    v = out.mean(dim=1)[0]
    v = v / v.norm()
    return {"dim": int(v.shape[0]), "head": [round(float(t), 4) for t in v[:4]]}


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        model(input_ids=torch.randint(4, len(VOCAB), (1, 64)))
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
