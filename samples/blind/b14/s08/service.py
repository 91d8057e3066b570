"""Support-ticket classifier: tokenises ticket text and runs a BERT-style encoder."""
import os
import random
import re

import torch
from fastapi import FastAPI
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(1)
LAYERS = int(os.environ.get("SVC_ENCODER_LAYERS", "8"))

WORDS = ["printer", "invoice", "refund", "login", "password", "error", "crash", "upgrade", "billing",
         "account", "slow", "network", "timeout", "server", "license", "update", "install", "screen",
         "email", "sync", "mobile", "order", "shipping", "delay", "broken", "missing", "charge", "card"]
VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in WORDS:
    VOCAB[w] = len(VOCAB)
    for suffix in ("s", "ed", "ing"):
        VOCAB["##" + suffix] = VOCAB.get("##" + suffix, len(VOCAB))
for c in "abcdefghijklmnopqrstuvwxyz0123456789":
    VOCAB.setdefault(c, len(VOCAB))
    VOCAB.setdefault("##" + c, len(VOCAB))

tok = Tokenizer(models.WordPiece(VOCAB, unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.enable_truncation(128)
tok.enable_padding(pad_id=0, pad_token="[PAD]", length=128)

config = BertConfig(vocab_size=len(VOCAB) + 8, hidden_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=160, num_labels=6)
torch.manual_seed(0)
model = BertForSequenceClassification(config).eval()

rnd = random.Random(3)


def _line():
    return " ".join(rnd.choice(WORDS) + rnd.choice(["", "s", "ed", "ing"]) for _ in range(rnd.randint(8, 20)))


def _ticket():
    body = [_line() + f" ref #{rnd.randint(1000, 9999)}" for _ in range(rnd.randint(3, 8))]
    history = []
    for depth in range(1, rnd.randint(4, 8)):
        history.append("On Mon, support wrote:")
        history += [">" * depth + " <p>" + _line() + "</p>" for _ in range(rnd.randint(25, 50))]
    return "\n".join(body + ["<br>sent from my phone"] + history)


TICKETS = [_ticket() for _ in range(256)]
_tag = re.compile(r"<[^>]+>")
_ref = re.compile(r"#\d+")

app = FastAPI()


def clean(text: str) -> str:
    kept = []
    for line in text.splitlines():
        line = _tag.sub(" ", line).strip()
        if line.startswith(">"):
            line = line.lstrip("> ")
        if not line or line.endswith("wrote:"):
            continue
        line = _ref.sub(" ref ", line)
        kept.append(" ".join(w.strip(".,!?").lower() for w in line.split() if len(w) > 1))
    return " ".join(kept)


@app.get("/classify")
def classify(ticket: int = 0):
    texts = [clean(TICKETS[(ticket + i) % len(TICKETS)]) for i in range(4)]
    enc = tok.encode_batch(texts)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits
    return {"ticket": ticket, "labels": logits.argmax(-1).tolist()}
