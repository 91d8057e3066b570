"""Churn-risk scoring API (Flask, threaded dev server) backed by a local feature store."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18403"))
FS_PORT = int(os.environ.get("FS_PORT", "18453"))
POOL = int(os.environ.get("SVC_FS_POOL", "1"))

here = os.path.dirname(os.path.abspath(__file__))
fs = subprocess.Popen([sys.executable, os.path.join(here, "featstore.py")],
                      env=dict(os.environ, FS_PORT=str(FS_PORT)))


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    fs.kill()
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()


class FeatureClient:
    def __init__(self, port):
        for _ in range(100):
            try:
                self.sock = socket.create_connection(("127.0.0.1", port))
                break
            except OSError:
                time.sleep(0.1)
        self.r = self.sock.makefile("rb")
        self.lock = threading.Lock()

    def get(self, uid):
        with self.lock:
            self.sock.sendall(f"{uid}\n".encode())
            return json.loads(self.r.readline())


clients = queue.Queue()
for _ in range(POOL):
    clients.put(FeatureClient(FS_PORT))

rng = np.random.default_rng(0)
W1 = rng.standard_normal((32 + 8, 64)).astype(np.float32)
W2 = rng.standard_normal((64, 1)).astype(np.float32)


class Scorer:
    def __call__(self, feats):
        h = np.tanh(feats @ W1)
        return float(1 / (1 + np.exp(-(h @ W2)[0])))


scorer = Scorer()
app = Flask(__name__)


@app.post("/score")
def score():
    body = request.get_json()
    c = clients.get()
    try:
        stored = c.get(body["user_id"])
    finally:
        clients.put(c)
    x = np.asarray(stored + body["recent"], dtype=np.float32)
    return jsonify({"user_id": body["user_id"], "risk": scorer(x)})


if __name__ == "__main__":
    app.run(host="127.0.0.1", port=PORT, threaded=True)
