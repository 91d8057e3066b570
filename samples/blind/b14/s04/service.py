"""Fraud scoring API: a feed-forward network over a transaction's engineered features."""
import os

os.environ["OPENBLAS_NUM_THREADS"] = os.environ.get("SVC_BLAS_THREADS", "8")

import numpy as np
from flask import Flask, jsonify, request


class RiskNet:
    def __init__(self, d_in=512, hidden=1024, layers=3, seed=0):
        rng = np.random.default_rng(seed)
        dims = [d_in] + [hidden] * layers
        self.weights = [(rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32) for a, b in zip(dims, dims[1:])]
        self.biases = [np.zeros(b, np.float32) for b in dims[1:]]
        self.out = (rng.standard_normal((hidden, 2)) / np.sqrt(hidden)).astype(np.float32)

    def __call__(self, x):
        for w, b in zip(self.weights, self.biases):
            x = np.maximum(x @ w + b, 0.0)
        logits = x @ self.out
        e = np.exp(logits - logits.max(1, keepdims=True))
        return e / e.sum(1, keepdims=True)


model = RiskNet()
FEATURES = np.random.default_rng(1).standard_normal((256, 64, 512)).astype(np.float32)
app = Flask(__name__)


@app.get("/score")
def score():
    account = int(request.args.get("account", 0)) % FEATURES.shape[0]
    probs = model(FEATURES[account])
    return jsonify(account=account, risk=float(probs[:, 1].max()))


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=18804, threaded=True)
