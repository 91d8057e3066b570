"""Semantic search API: FastAPI (sync handlers) -> remote embedder over HTTP -> cosine top-k over a small catalogue."""
import http.client
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18541"))
EMB_PORT = PORT + 1
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))

env = dict(os.environ, EMBED_LATENCY_MS=os.environ.get("SVC_EMBED_LATENCY_MS", "50"))
emb = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "embedder.py"), str(EMB_PORT)],
                       stdout=subprocess.PIPE, text=True, env=env)
emb.stdout.readline()

rng = np.random.default_rng(0)
CATALOGUE = rng.standard_normal((2000, 64)).astype(np.float32)
CATALOGUE /= np.linalg.norm(CATALOGUE, axis=1, keepdims=True)
NAMES = [f"doc-{i}" for i in range(len(CATALOGUE))]

_local = threading.local()


def embed(text: str) -> np.ndarray:
    conn = getattr(_local, "conn", None)
    if conn is None:
        conn = _local.conn = http.client.HTTPConnection("127.0.0.1", EMB_PORT, timeout=10)
    body = json.dumps({"text": text}).encode()
    conn.request("POST", "/embed", body=body, headers={"Content-Type": "application/json"})
    resp = conn.getresponse()
    return np.asarray(json.loads(resp.read())["embedding"], dtype=np.float32)


app = FastAPI()
served = [0]
t0 = time.time()


class Query(BaseModel):
    text: str
    k: int = 5


@app.post("/search")
def search(q: Query):
    v = embed(q.text)
    v /= np.linalg.norm(v) + 1e-9
    scores = CATALOGUE @ v
    top = np.argpartition(-scores, q.k)[: q.k]
    top = top[np.argsort(-scores[top])]
    served[0] += 1
    return {"hits": [{"id": NAMES[i], "score": round(float(scores[i]), 4)} for i in top]}


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - t0, 1)}), flush=True)
    emb.terminate()
    os._exit(0)


if __name__ == "__main__":
    threading.Timer(LIFETIME, _exit).start()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False))
    server.install_signal_handlers = lambda: None
    signal.signal(signal.SIGTERM, _exit)
    server.run()
