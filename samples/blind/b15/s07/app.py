"""Churn prediction API (Flask) that fetches user features from the feature store."""
import os
import socket

import numpy as np
from flask import Flask, jsonify, request

STORE = ("127.0.0.1", int(os.environ.get("SVC_STORE_PORT", "18857")))
rng = np.random.default_rng(7)
W = rng.standard_normal(32).astype(np.float32)

app = Flask(__name__)
_conn = {}


def store_get(user):
    s = _conn.get("s")
    if s is None:
        s = socket.create_connection(STORE)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _conn["s"] = s
        _conn["f"] = s.makefile("rb")
    s.sendall(f"GET user:{user}\n".encode())
    return np.array(_conn["f"].readline().split(), dtype=np.float32)


@app.post("/predict")
def predict():
    user = int(request.get_json()["user"])
    feats = store_get(user)
    p = 1.0 / (1.0 + np.exp(-float(feats @ W)))
    return jsonify({"user": user, "churn": p})


@app.get("/health")
def health():
    return jsonify(ok=True)
