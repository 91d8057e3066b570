"""Document relevance scorer: stdlib HTTP server whose connections run on a ThreadPoolExecutor.
Each document is split into sentences that are scored in parallel and pooled."""
import json
import os
import signal
import socketserver
import threading
import time
import zlib
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer

import numpy as np

PORT = int(os.environ.get("SVC_PORT", "18408"))
PARALLEL = os.environ.get("SVC_SENT_POOL", "per_request")
DIM = 64
rng = np.random.default_rng(0)
EMB = rng.standard_normal((1 << 14, DIM)).astype(np.float32)
W = rng.standard_normal((DIM,)).astype(np.float32)
shared = ThreadPoolExecutor(max_workers=4, thread_name_prefix="sent")


def score_sentence(sent):
    ids = [zlib.crc32(w.encode()) & 0x3FFF for w in sent.split()]
    v = EMB[ids].mean(axis=0)
    return float(np.tanh(v @ W))


def score(doc):
    sents = [s for s in doc.split(".") if s.strip()]
    if PARALLEL == "per_request":
        with ThreadPoolExecutor(max_workers=len(sents)) as ex:
            vals = list(ex.map(score_sentence, sents))
    else:
        vals = list(shared.map(score_sentence, sents))
    return max(vals), sum(vals) / len(vals)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        best, avg = score(body["doc"])
        out = json.dumps({"best": round(best, 4), "mean": round(avg, 4)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


class PoolServer(HTTPServer):
    """HTTP server that hands each accepted connection to a fixed thread pool."""
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, addr, handler, workers=16):
        super().__init__(addr, handler)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="conn")

    def process_request(self, request, client_address):
        self.pool.submit(self._work, request, client_address)

    def _work(self, request, client_address):
        try:
            self.finish_request(request, client_address)
        except Exception:
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_lifetime, daemon=True).start()
    PoolServer(("127.0.0.1", PORT), Handler).serve_forever()
