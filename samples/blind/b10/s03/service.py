"""Risk model API: plain WSGI app served by gunicorn, torch MLP."""
import json
import os
import signal
import threading

import torch
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18803"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
WORKERS = int(os.environ.get("SVC_WORKERS", "4"))
TORCH_THREADS = int(os.environ.get("SVC_TORCH_THREADS", "2"))
DEPTH = int(os.environ.get("SVC_DEPTH", "8"))


class RiskNet(torch.nn.Module):
    def __init__(self, d_in=64, width=384, depth=8):
        super().__init__()
        layers = [torch.nn.Linear(d_in, width), torch.nn.GELU()]
        for _ in range(depth):
            layers += [torch.nn.Linear(width, width), torch.nn.LayerNorm(width), torch.nn.GELU()]
        layers.append(torch.nn.Linear(width, 1))
        self.net = torch.nn.Sequential(*layers)

    def forward(self, x):
        return self.net(x)


model = None


def post_fork(server, worker):
    global model
    torch.set_num_threads(TORCH_THREADS)
    torch.manual_seed(0)
    model = RiskNet(depth=DEPTH).eval()


def app(environ, start_response):
    size = int(environ.get("CONTENT_LENGTH") or 0)
    body = json.loads(environ["wsgi.input"].read(size) or b"{}")
    g = torch.Generator().manual_seed(int(body.get("seed", 0)))
    x = torch.randn(int(body.get("rows", 256)), 64, generator=g)
    with torch.inference_mode():
        s = torch.sigmoid(model(x)).squeeze(1)
    out = json.dumps({"mean": float(s.mean()), "max": float(s.max())}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))])
    return [out]


class Server(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", WORKERS)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("post_fork", post_fork)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return app


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    Server().run()
