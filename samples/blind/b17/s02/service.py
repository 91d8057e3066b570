"""Personalised ranking API: Flask (threaded) with a profile store client and a NumPy scorer."""
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

PORT = int(os.environ.get("SVC_PORT", "18802"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18892"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
CONNECTIONS = os.environ.get("SVC_CONNECTIONS", "shared")

rng = np.random.default_rng(2)
ITEM_EMB = rng.standard_normal((16, 500, 16)).astype(np.float32)


class StoreClient:
    """Line-protocol client for the profile store."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")
        self.lock = threading.Lock()

    def get(self, key):
        with self.lock:
            self.sock.sendall(f"GET {key}\n".encode())
            return json.loads(self.rfile.readline())


_shared = None
_local = threading.local()


def store():
    global _shared
    if CONNECTIONS == "per_thread":
        c = getattr(_local, "client", None)
        if c is None:
            c = _local.client = StoreClient(STORE_PORT)
        return c
    if _shared is None:
        _shared = StoreClient(STORE_PORT)
    return _shared


app = Flask(__name__)


@app.post("/rank")
def rank():
    req = request.get_json()
    profile = store().get(req["user"])
    w = np.asarray(profile["weights"], dtype=np.float32)
    scores = ITEM_EMB[profile["segment"]] @ w
    top = np.argpartition(-scores, 10)[:10]
    return jsonify({"items": top.tolist()})


def start_store():
    proc = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "profile_store.py"),
                             str(STORE_PORT)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    return proc


if __name__ == "__main__":
    store_proc = start_store()
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    store()
    try:
        app.run(host="127.0.0.1", port=PORT, threaded=True)
    finally:
        store_proc.terminate()
