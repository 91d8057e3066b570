"""Search result re-ranking service."""
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from flask import Flask, jsonify, request

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
PARALLELISM = int(os.environ.get("SVC_PARALLELISM", "16"))
DIM = 48


class Ranker:
    def __init__(self):
        rng = np.random.default_rng(3)
        self.w1 = rng.standard_normal((DIM, 32)).astype(np.float32)
        self.w2 = rng.standard_normal(32).astype(np.float32)
        self.docs = rng.standard_normal((50000, DIM)).astype(np.float32)

    def score_chunk(self, q, ids):
        x = self.docs[ids] * q
        return np.maximum(x @ self.w1, 0) @ self.w2

    def rank(self, q, ids):
        chunks = np.array_split(ids, PARALLELISM)
        if PARALLELISM > 1:
            with ThreadPoolExecutor(max_workers=PARALLELISM) as ex:
                parts = list(ex.map(lambda c: self.score_chunk(q, c), chunks))
        else:
            parts = [self.score_chunk(q, ids)]
        scores = np.concatenate(parts)
        return ids[np.argsort(-scores)[:20]]


ranker = Ranker()
app = Flask(__name__)


@app.get("/health")
def health():
    return "ok"


@app.post("/rerank")
def handle():
    body = request.get_json()
    q = np.asarray(body["query"], dtype=np.float32)
    ids = np.asarray(body["candidates"], dtype=np.int64)
    return jsonify({"top": ranker.rank(q, ids).tolist()})
