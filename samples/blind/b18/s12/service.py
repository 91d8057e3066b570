"""Query intent classifier: WSGI app under gunicorn sync workers, torch encoder from config.
The master also runs the background index-maintenance processes."""
import os
import json
import signal
import subprocess
import sys
import threading

import torch
from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18862"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
MAINT_PROCS = int(os.environ.get("SVC_MAINT_PROCS", "3"))
MAINT_NICE = int(os.environ.get("SVC_MAINT_NICE", "0"))
HERE = os.path.dirname(os.path.abspath(__file__))
SEQ, VOCAB = 64, 8000

torch.set_num_threads(1)
torch.manual_seed(0)


class Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(VOCAB, 256)
        layer = torch.nn.TransformerEncoderLayer(256, 4, 1024, batch_first=True, dropout=0.0)
        self.body = torch.nn.TransformerEncoder(layer, 3, enable_nested_tensor=False)
        self.head = torch.nn.Linear(256, 12)

    def forward(self, ids):
        return self.head(self.body(self.emb(ids)).mean(dim=1))


model = Encoder().eval()


def app(environ, start_response):
    if environ.get("PATH_INFO") == "/health":
        body = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        req = json.loads(environ["wsgi.input"].read(n) or b"{}")
        ids = [hash(w) % VOCAB for w in req.get("query", "").split()][:SEQ] or [0]
        ids = ids + [0] * (SEQ - len(ids))
        with torch.inference_mode():
            logits = model(torch.tensor([ids]))[0]
        body = json.dumps({"intent": int(logits.argmax()), "score": float(logits.max())}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
    return [body]


class Server(BaseApplication):
    def __init__(self, application, options):
        self.application = application
        self.options = options
        super().__init__()

    def load_config(self):
        for k, v in self.options.items():
            self.cfg.set(k, v)

    def load(self):
        return self.application


def _when_ready(server):
    for _ in range(MAINT_PROCS):
        subprocess.Popen([sys.executable, os.path.join(HERE, "compactor.py"), str(LIFETIME), str(MAINT_NICE)])
    t = threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM))
    t.daemon = True
    t.start()


if __name__ == "__main__":
    Server(app, {
        "bind": f"127.0.0.1:{PORT}",
        "workers": 2,
        "worker_class": "sync",
        "loglevel": "warning",
        "when_ready": _when_ready,
        "graceful_timeout": 2,
        "timeout": 60,
    }).run()
