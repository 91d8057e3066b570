"""Stand-in for the remote embedding backend (GPU box in production): HTTP JSON, fixed service time."""
import json
import os
import sys
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("EMBED_LATENCY_MS", "50")) / 1000.0


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        time.sleep(DELAY)
        rng = np.random.default_rng(zlib.crc32(body["text"].encode()))
        out = json.dumps({"embedding": rng.standard_normal(64).round(4).tolist()}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)

    def log_message(self, *a):
        pass


ThreadingHTTPServer.daemon_threads = True
srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
print("embedder ready", flush=True)
srv.serve_forever()
