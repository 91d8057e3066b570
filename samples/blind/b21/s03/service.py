"""Catalogue search ranking API (FastAPI, sync handlers) with a small transformer ranker."""
import os
import subprocess
import sys
import threading
import time

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertModel

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REINDEX_PROCS = int(os.environ.get("SVC_REINDEX_PROCS", "3"))
HERE = os.path.dirname(os.path.abspath(__file__))

torch.set_num_threads(1)
torch.manual_seed(0)
config = BertConfig(vocab_size=5000, hidden_size=256, num_hidden_layers=2, num_attention_heads=4,
                    intermediate_size=512, max_position_embeddings=64)
ranker = BertModel(config).eval()
head = torch.nn.Linear(256, 1).eval()

app = FastAPI()


class Query(BaseModel):
    tokens: list[int]
    candidates: int = 4


@app.post("/rank")
def predict(q: Query):
    ids = torch.tensor([q.tokens[:62]] * q.candidates) % 5000
    ids[:, 0] = torch.arange(q.candidates)
    with torch.no_grad():
        scores = head(ranker(input_ids=ids).last_hidden_state[:, 0])[:, 0]
    order = torch.argsort(scores, descending=True)
    return {"order": order.tolist()}


@app.get("/health")
def health():
    return "ok"


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    import uvicorn
    for i in range(REINDEX_PROCS):
        subprocess.Popen([sys.executable, os.path.join(HERE, "reindex.py"), str(os.getpid()), str(LIFETIME), str(i)],
                         start_new_session=True, stdin=subprocess.DEVNULL)
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
