"""Recommendation scoring API (Flask) backed by a local feature store."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time

import numpy as np
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18804"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18854"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

app = Flask(__name__)
rng = np.random.default_rng(1)
W = rng.standard_normal((32, 8))


def fetch_features(uid):
    with socket.create_connection(("127.0.0.1", STORE_PORT), timeout=5) as s:
        f = s.makefile("rwb")
        f.write(f"{uid}\n".encode())
        f.flush()
        return np.asarray(json.loads(f.readline()))


@app.post("/predict")
def predict():
    uid = int(request.get_json(force=True).get("user", 0))
    x = fetch_features(uid)
    scores = x @ W
    return jsonify({"user": uid, "best": int(np.argmax(scores)), "score": float(scores.max())})


def main():
    store = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "store.py")])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)

    def stop():
        store.terminate()
        os._exit(0)

    threading.Timer(LIFETIME, stop).start()
    signal.signal(signal.SIGTERM, lambda *a: stop())
    app.run(host="127.0.0.1", port=PORT, threaded=True)


if __name__ == "__main__":
    main()
