"""Inference service."""
import os

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertModel

import textproc

torch.set_num_threads(1)
torch.manual_seed(0)
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
config = BertConfig(vocab_size=512, hidden_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=256)
encoder = BertModel(config).eval()
tokenizer = textproc.build_tokenizer()
tokenizer.enable_truncation(128)

app = FastAPI()


class Query(BaseModel):
    text: str


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/embed")
def embed(q: Query):
    enc = tokenizer.encode(q.text)
    ids = torch.tensor([enc.ids])
    with torch.no_grad():
        h = encoder(input_ids=ids).last_hidden_state
    v = torch.nn.functional.normalize(h.mean(1), dim=-1)[0]
    return {"dim": int(v.shape[0]), "vector": v[:8].tolist(), "tokens": len(enc.ids)}


if __name__ == "__main__":
    import argparse
    import uvicorn

    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, default=18137)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    uvicorn.run("service:app", host="127.0.0.1", port=a.port, workers=a.workers, log_level="warning",
                access_log=False)
