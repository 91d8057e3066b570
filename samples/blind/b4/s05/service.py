"""Candidate retrieval service: returns the top items for a batch of session embeddings."""
import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")

import numpy as np
from flask import Flask, jsonify, request

N_ITEMS = 20000
DIM = 256
DTYPE = np.float64 if os.environ.get("SVC_PRECISION", "double") == "double" else np.float32


class Retriever:
    def __init__(self):
        rng = np.random.default_rng(42)
        items = rng.standard_normal((N_ITEMS, DIM))
        items /= np.linalg.norm(items, axis=1, keepdims=True)
        self.items_t = np.ascontiguousarray(items.T.astype(DTYPE))
        self.proj = rng.standard_normal((64, DIM)).astype(DTYPE) / 8.0

    def embed(self, feats):
        return np.tanh(np.asarray(feats, dtype=DTYPE) @ self.proj)

    def top(self, feats, k=10):
        q = self.embed(feats)
        scores = q @ self.items_t
        idx = np.argpartition(-scores, k, axis=1)[:, :k]
        return idx


retriever = Retriever()
app = Flask(__name__)
_rng = np.random.default_rng(1)


@app.get("/health")
def health():
    return "ok"


@app.post("/retrieve")
def handle():
    body = request.get_json()
    seed = int(body.get("seed", 0))
    feats = np.random.default_rng(seed).standard_normal((int(body.get("sessions", 128)), 64))
    idx = retriever.top(feats)
    return jsonify({"top": idx[:4].tolist()})
