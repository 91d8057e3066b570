"""Search re-ranking API (Flask): lexical features and a linear scorer over the candidate documents."""
import math
import random

from flask import Flask, jsonify, request

random.seed(11)
VOCAB = [f"w{i}" for i in range(3000)]
DOCS = [[random.choice(VOCAB) for _ in range(random.randint(150, 300))] for _ in range(4000)]
DF = {}
for d in DOCS:
    for t in set(d):
        DF[t] = DF.get(t, 0) + 1
N = len(DOCS)
AVG = sum(len(d) for d in DOCS) / N
WEIGHTS = [1.0, 0.35, 0.2, -0.05]

app = Flask(__name__)


def features(query, doc):
    tf = {}
    for t in doc:
        tf[t] = tf.get(t, 0) + 1
    bm25 = 0.0
    for q in query:
        f = tf.get(q, 0)
        if f:
            idf = math.log(1 + (N - DF[q] + 0.5) / (DF[q] + 0.5))
            bm25 += idf * f * 2.2 / (f + 1.2 * (0.25 + 0.75 * len(doc) / AVG))
    qs = set(query)
    first = next((i for i, t in enumerate(doc) if t in qs), len(doc))
    bigrams = sum(1 for a, b in zip(doc, doc[1:]) if a in qs and b in qs)
    return [bm25, bigrams, 1.0 / (1 + first), len(doc) / AVG]


@app.post("/rerank")
def rerank():
    body = request.get_json()
    query = body["query"]
    cands = body["candidates"]
    scored = []
    for c in cands:
        f = features(query, DOCS[c % N])
        scored.append((sum(w * x for w, x in zip(WEIGHTS, f)), c))
    scored.sort(reverse=True)
    return jsonify({"top": [c for _, c in scored[:10]]})


@app.get("/health")
def health():
    return jsonify(ok=True)
