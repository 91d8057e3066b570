"""Intent classifier behind gunicorn (sync workers): text -> WordPiece -> NumPy token encoder -> intent."""
import os

_blas = os.environ.get("SVC_BLAS_THREADS")
if _blas:
    os.environ["OPENBLAS_NUM_THREADS"] = _blas

import numpy as np  # noqa: E402
from flask import Flask, jsonify, request  # noqa: E402
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers  # noqa: E402

LETTERS = "abcdefghijklmnopqrstuvwxyz"
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for a in LETTERS:
    vocab[a] = len(vocab)
    vocab["##" + a] = len(vocab)
    for b in LETTERS:
        vocab[a + b] = len(vocab)
        vocab["##" + a + b] = len(vocab)
tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.enable_truncation(126)

INTENTS = ["billing", "cancel", "upgrade", "bug", "login", "shipping", "refund", "other"]
D, F, LAYERS = 384, 1536, 4
rng = np.random.default_rng(0)
EMB = (rng.standard_normal((len(vocab), D)) * 0.1).astype(np.float32)
BLOCKS = [((rng.standard_normal((D, F)) / np.sqrt(D)).astype(np.float32),
           (rng.standard_normal((F, D)) / np.sqrt(F)).astype(np.float32)) for _ in range(LAYERS)]
HEAD = (rng.standard_normal((D, len(INTENTS))) / np.sqrt(D)).astype(np.float32)


def encode(ids):
    h = EMB[ids]
    for w1, w2 in BLOCKS:
        h = h + np.maximum(h @ w1, 0.0) @ w2
        h = (h - h.mean(-1, keepdims=True)) / (h.std(-1, keepdims=True) + 1e-5)
    return h.mean(0)


app = Flask(__name__)


@app.post("/predict")
def predict():
    text = request.get_json()["text"]
    ids = np.array([2] + tok.encode(text).ids + [3])
    logits = encode(ids) @ HEAD
    p = np.exp(logits - logits.max())
    p /= p.sum()
    i = int(p.argmax())
    return jsonify({"intent": INTENTS[i], "score": round(float(p[i]), 4), "tokens": int(len(ids))})


@app.get("/healthz")
def healthz():
    return "ok"
