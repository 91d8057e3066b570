"""Document embeddings with a cache: a sync FastAPI endpoint and a lock held too long.

The embedding cache is a dict with one lock. On a miss the code computes the embedding
(a small BERT forward in torch, which releases the GIL) while still holding the lock, so
requests for different documents queue behind each other. Most keys are new (the cache
rarely hits). CACHE_LOCK=narrow computes outside the lock and locks only the dict.
"""

import threading

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import setting, tiny_bert

torch.set_num_threads(1)
NARROW = setting("CACHE_LOCK", "wide") == "narrow"
encoder = tiny_bert(layers=2, hidden=384, vocab_size=3000)
app = FastAPI()


class EmbeddingCache:
    def __init__(self, size: int = 256) -> None:
        self.items: dict[str, list[float]] = {}
        self.lock = threading.Lock()
        self.size = size

    def compute(self, key: str) -> list[float]:
        ids = torch.tensor([[(hash(key) + i) % 3000 for i in range(256)]])
        with torch.inference_mode():
            return encoder(input_ids=ids).pooler_output[0, :8].tolist()

    def get(self, key: str) -> list[float]:
        if NARROW:
            with self.lock:
                hit = self.items.get(key)
            if hit is not None:
                return hit
            value = self.compute(key)
            with self.lock:
                self.store(key, value)
            return value
        with self.lock:
            if key not in self.items:
                self.store(key, self.compute(key))
            return self.items[key]

    def store(self, key: str, value: list[float]) -> None:
        if len(self.items) >= self.size:
            self.items.pop(next(iter(self.items)))
        self.items[key] = value


cache = EmbeddingCache()


class Doc(BaseModel):
    text: str = ""


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/embed/{doc_id}")
def embed(doc_id: str, doc: Doc) -> dict:
    return {"embedding": cache.get(doc_id)}
