"""Sentiment API at night: a small BERT behind FastAPI that gets a request now and then.

Two clients, each sending a request every 0.5-1.5 s: the service waits for work almost all
the time. Its capacity is far above the traffic; more traffic is served at once.
"""

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import tiny_bert, wordpiece_tokenizer

torch.set_num_threads(1)
tok, vocab_size = wordpiece_tokenizer(max_len=64)
model = tiny_bert(layers=2, hidden=128, vocab_size=vocab_size)
app = FastAPI()


class Review(BaseModel):
    text: str


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/sentiment")
def sentiment(r: Review) -> dict:
    enc = tok.encode(r.text)
    with torch.inference_mode():
        score = model(input_ids=torch.tensor([enc.ids])).pooler_output[0, 0]
    return {"positive": float(score) > 0}
