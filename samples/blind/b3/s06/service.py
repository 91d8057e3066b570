"""Inference service."""
import os

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertModel

import textproc

INTRA = int(os.environ.get("SVC_INTRA", "0"))
if INTRA > 0:
    torch.set_num_threads(INTRA)

torch.manual_seed(0)
config = BertConfig(vocab_size=512, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=128)
encoder = BertModel(config).eval()
head = torch.nn.Linear(256, 3).eval()
tokenizer = textproc.build_tokenizer()
LABELS = ["negative", "neutral", "positive"]

app = FastAPI()


class Batch(BaseModel):
    texts: list[str]


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/predict")
async def predict(batch: Batch):
    texts = [textproc.clean(t) for t in batch.texts]
    enc = tokenizer.encode_batch(texts)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.no_grad():
        pooled = encoder(input_ids=ids, attention_mask=mask).pooler_output
        probs = head(pooled).softmax(-1)
    return {"labels": [LABELS[i] for i in probs.argmax(-1).tolist()], "scores": probs.max(-1).values.tolist()}


if __name__ == "__main__":
    import argparse
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18136)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    uvicorn.run("service:app", host="127.0.0.1", port=a.port, workers=a.workers, log_level="warning",
                access_log=False)
