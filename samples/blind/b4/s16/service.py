"""Intent classification service with optional shadow evaluation of a candidate model."""
import logging
import os

import torch
from flask import Flask, jsonify, request

torch.set_num_threads(1)
log = logging.getLogger("intent")

SHADOW_WORKERS = int(os.environ.get("SVC_SHADOW_WORKERS", "2"))
VOCAB = 8000


class Encoder(torch.nn.Module):
    def __init__(self, dim, layers, heads):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, dim)
        layer = torch.nn.TransformerEncoderLayer(dim, heads, dim * 4, batch_first=True, dropout=0.0)
        self.enc = torch.nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)
        self.head = torch.nn.Linear(dim, 12)

    @torch.inference_mode()
    def forward(self, ids):
        return self.head(self.enc(self.emb(ids)).mean(dim=1)).softmax(-1)


def hash_tokens(text, n=64):
    ids = [hash(w) % VOCAB for w in text.lower().split()][:n]
    return torch.tensor([ids + [0] * (n - len(ids))])


class Service:
    def __init__(self):
        torch.manual_seed(0)
        self.model = Encoder(64, 1, 4).eval()
        self.candidate = None
        self.agree = 0

    def candidate_model(self):
        if self.candidate is None:
            idx = int(os.environ.get("SVC_WORKER_INDEX", "0"))
            if idx < SHADOW_WORKERS:
                torch.manual_seed(1)
                self.candidate = Encoder(256, 4, 8).eval()
            else:
                self.candidate = False
        return self.candidate

    def predict(self, text):
        ids = hash_tokens(text)
        p = self.model(ids)
        cand = self.candidate_model()
        if cand:
            q = cand(ids)
            self.agree += int(p.argmax() == q.argmax())
        return int(p.argmax()), float(p.max())


svc = Service()
app = Flask(__name__)


@app.get("/health")
def health():
    return "ok"


@app.post("/intent")
def predict():
    label, conf = svc.predict(request.get_json()["text"])
    return jsonify({"intent": label, "confidence": round(conf, 4)})
