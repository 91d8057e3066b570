"""Fraud scoring endpoint on the stdlib ThreadingHTTPServer; torch MLP; drift monitor on the request features."""
import json
import multiprocessing as mp
import os
import queue
import signal
import socket
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import torch

from monitor import N_FEAT, drift_loop

PORT = int(os.environ.get("SVC_PORT", "18581"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
MONITOR = os.environ.get("SVC_MONITOR", "thread")
CACHE_PORT = PORT + 1
N_LOOKUPS = 4

torch.set_num_threads(1)
torch.manual_seed(0)


class FraudNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        dims = [N_FEAT, 128, 128, 128, 128, 128, 128, 64]
        layers = []
        for a, b in zip(dims[:-1], dims[1:]):
            layers += [torch.nn.Linear(a, b), torch.nn.LayerNorm(b), torch.nn.GELU()]
        self.body = torch.nn.Sequential(*layers)
        self.out = torch.nn.Linear(64, 1)

    def forward(self, x):
        return torch.sigmoid(self.out(self.body(x)))


model = FraudNet().eval()
cache = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "cache.py"), str(CACHE_PORT)],
                         stdout=subprocess.PIPE, text=True)
cache.stdout.readline()
_tls = threading.local()


def lookup(key):
    f = getattr(_tls, "f", None)
    if f is None:
        s = socket.create_connection(("127.0.0.1", CACHE_PORT))
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        _tls.s, f = s, s.makefile("rb")
        _tls.f = f
    _tls.s.sendall(b"GET %d\n" % key)
    return json.loads(f.readline())

report = {}
if MONITOR == "process":
    feed = mp.Queue(maxsize=20000)
    mon = mp.Process(target=drift_loop, args=(feed,), daemon=True)
    mon.start()
else:
    feed = queue.Queue(maxsize=20000)
    threading.Thread(target=drift_loop, args=(feed,), kwargs={"report": report}, daemon=True).start()

served = [0]
t0 = time.time()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        txn = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        feats = [float(v) for v in txn["features"][:N_FEAT - N_LOOKUPS]]
        for key in (txn["card"], txn["merchant"], txn["device"], txn["ip"]):
            profile, velocity = lookup(2 * key), lookup(2 * key + 1)
            feats.append(sum(profile) - 0.5 * sum(velocity))
        with torch.inference_mode():
            p = float(model(torch.tensor([feats]))[0, 0])
        try:
            feed.put_nowait(feats)
        except queue.Full:
            pass
        served[0] += 1
        out = json.dumps({"txn": txn["id"], "fraud_p": round(p, 5), "block": p > 0.9}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


def _exit(*_):
    print(json.dumps({"served": served[0], "uptime_s": round(time.time() - t0, 1)}), flush=True)
    cache.terminate()
    os._exit(0)


if __name__ == "__main__":
    signal.signal(signal.SIGTERM, _exit)
    threading.Timer(LIFETIME, _exit).start()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.request_queue_size = 64
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
