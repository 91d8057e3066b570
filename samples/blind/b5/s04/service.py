"""FAQ matcher: Flask on gunicorn sync workers; query embedding from the embedding service, NumPy nearest FAQ.

Env:
  SVC_PORT          listen port (default 18304)
  SVC_WORKERS       gunicorn sync workers (default 4)
  SVC_EMB_PORT      embedding service port (default 18354); started here as a child process
  SVC_EMB_DELAY_MS  passed to the embedding child (its model latency)
"""
import os
import subprocess
import sys

import numpy as np
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18304"))
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
EMB_PORT = int(os.environ.get("SVC_EMB_PORT", "18354"))
HERE = os.path.dirname(os.path.abspath(__file__))


def build_app():
    import requests
    from flask import Flask, jsonify, request

    rng = np.random.default_rng(1)
    faq = rng.standard_normal((2000, 128)).astype(np.float32)
    faq /= np.linalg.norm(faq, axis=1, keepdims=True)
    session = requests.Session()
    app = Flask(__name__)

    @app.get("/health")
    def health():
        return {"ok": True}

    @app.post("/match")
    def match():
        q = request.get_json()["query"]
        r = session.post(f"http://127.0.0.1:{EMB_PORT}/embed", json={"text": q}, timeout=10)
        v = np.asarray(r.json()["embedding"], dtype=np.float32)
        v /= np.linalg.norm(v)
        sims = faq @ v
        top = np.argpartition(-sims, 5)[:5]
        top = top[np.argsort(-sims[top])]
        return jsonify({"faq_ids": top.tolist(), "scores": sims[top].round(4).tolist()})

    return app


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", WORKERS)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("timeout", 60)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return build_app()


if __name__ == "__main__":
    env = dict(os.environ, EMB_PORT=str(EMB_PORT), EMB_DELAY_MS=os.environ.get("SVC_EMB_DELAY_MS", "60"))
    child = subprocess.Popen([sys.executable, os.path.join(HERE, "embedder.py")], env=env)
    try:
        Server().run()
    finally:
        child.terminate()
