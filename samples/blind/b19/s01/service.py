"""Sentiment classification API (FastAPI, BERT-style encoder built from a config)."""
import os
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
HIDDEN = int(os.environ.get("SVC_HIDDEN", "384"))
MAX_LEN = 128

torch.set_num_threads(1)
torch.manual_seed(0)

cfg = BertConfig(vocab_size=8000, hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                 num_attention_heads=HIDDEN // 64, intermediate_size=HIDDEN * 4,
                 max_position_embeddings=256, num_labels=3)
model = BertForSequenceClassification(cfg).eval()

VOCAB = {}


def encode(text):
    ids = [101]
    for w in text.lower().split():
        ids.append(VOCAB.setdefault(w, 1000 + (hash(w) % 6900)))
    ids = ids[: MAX_LEN - 1] + [102]
    ids += [0] * (MAX_LEN - len(ids))
    return torch.tensor([ids])


class Req(BaseModel):
    text: str


app = FastAPI()


@app.post("/classify")
def classify(req: Req):
    x = encode(req.text)
    with torch.inference_mode():
        logits = model(input_ids=x, attention_mask=(x != 0).long()).logits
    p = torch.softmax(logits, -1)[0].tolist()
    return {"label": int(max(range(3), key=lambda i: p[i])), "probs": p}


def main():
    with torch.inference_mode():
        x = encode("warm up " * 40)
        for _ in range(3):
            model(input_ids=x)
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    threading.Timer(LIFETIME, lambda: setattr(server, "should_exit", True)).start()
    server.run()


if __name__ == "__main__":
    main()
