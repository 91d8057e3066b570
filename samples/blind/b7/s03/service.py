"""Churn scorer: FastAPI (sync handlers) + features from a local feature-store child + torch MLP."""
import json
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18531"))
FS_PORT = PORT + 1
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
N_CONNS = int(os.environ.get("SVC_FS_CONNS", "1"))

torch.set_num_threads(1)
torch.manual_seed(0)

fs = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "featurestore.py"), str(FS_PORT)],
                      stdout=subprocess.PIPE, text=True)
fs.stdout.readline()


class FeatureClient:
    """Keeps N persistent connections to the feature store."""

    def __init__(self, n):
        self.free = queue.Queue()
        for _ in range(n):
            s = socket.create_connection(("127.0.0.1", FS_PORT))
            s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self.free.put((s, s.makefile("rb")))

    def get(self, uid):
        conn = self.free.get()
        try:
            s, f = conn
            s.sendall(f"GET {uid}\n".encode())
            return json.loads(f.readline())
        finally:
            self.free.put(conn)


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(32 + 8, 256), torch.nn.ReLU(), torch.nn.Linear(256, 256),
                                       torch.nn.ReLU(), torch.nn.Linear(256, 1))

    def forward(self, x):
        return torch.sigmoid(self.net(x))


store = FeatureClient(N_CONNS)
model = Scorer().eval()
app = FastAPI()
served = [0]
t_start = time.time()


class Req(BaseModel):
    user_id: int
    activity: list[float]


@app.post("/predict")
def predict(req: Req):
    feats = store.get(req.user_id)
    x = torch.tensor([feats + req.activity[:8]], dtype=torch.float32)
    with torch.inference_mode():
        p = float(model(x)[0, 0])
    served[0] += 1
    return {"user_id": req.user_id, "churn": round(p, 4)}


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - t_start, 1)}), flush=True)
    fs.terminate()
    os._exit(0)


if __name__ == "__main__":
    threading.Timer(LIFETIME, _exit).start()
    config = uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    server.install_signal_handlers = lambda: None
    signal.signal(signal.SIGTERM, _exit)
    server.run()
