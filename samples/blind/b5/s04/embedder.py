"""Stand-in for the remote text-embedding service (HTTP, JSON)."""
import json
import os
import random
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(os.environ.get("EMB_PORT", "18354"))
DELAY = float(os.environ.get("EMB_DELAY_MS", "60")) / 1000.0
DIM = 128


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *a):
        pass

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(n))
        rnd = random.Random(body.get("text", ""))
        time.sleep(DELAY)  # remote model latency
        out = json.dumps({"embedding": [round(rnd.gauss(0, 1), 4) for _ in range(DIM)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        self.wfile.write(out)


if __name__ == "__main__":
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer(("127.0.0.1", PORT), H).serve_forever()
