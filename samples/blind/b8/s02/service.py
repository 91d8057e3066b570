import json, os, queue, socket, subprocess, sys, threading, time
import numpy as np
from flask import Flask, jsonify, request

PORT = int(os.environ.get("SVC_PORT", "18621"))
FS_PORT = int(os.environ.get("SVC_FS_PORT", "18622"))
POOL = int(os.environ.get("SVC_FS_CONNS", "1"))

fs = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "featstore.py"), str(FS_PORT)])
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", FS_PORT), 0.2).close(); break
    except OSError:
        time.sleep(0.1)


class FeatureClient:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.f = self.sock.makefile("rwb")

    def get(self, key):
        self.f.write(f"{key}\n".encode()); self.f.flush()
        return json.loads(self.f.readline())


class ClientPool:
    def __init__(self, n):
        self.q = queue.Queue()
        for _ in range(n):
            self.q.put((FeatureClient(FS_PORT), threading.Lock()))

    def get(self, key):
        c, guard = self.q.get()
        self.q.put((c, guard))
        with guard:
            return c.get(key)


clients = ClientPool(POOL)
rng = np.random.default_rng(0)
W = rng.standard_normal((64 + 16, 4)).astype(np.float32)
app = Flask(__name__)


@app.post("/predict")
def predict():
    body = request.get_json()
    feats = np.asarray(clients.get(body["user_id"]), dtype=np.float32)
    x = np.concatenate([feats, np.asarray(body["context"], dtype=np.float32)])
    s = x @ W
    return jsonify({"scores": s.round(4).tolist()})


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    fs.kill(); os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    app.run(host="127.0.0.1", port=PORT, threaded=True)
