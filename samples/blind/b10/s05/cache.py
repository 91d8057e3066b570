"""Local embedding cache: answers 'GET <key>' with a vector over a line-based TCP protocol."""
import os
import socketserver
import time

import numpy as np

PORT = int(os.environ.get("SVC_CACHE_PORT", "18855"))
DELAY = float(os.environ.get("SVC_CACHE_DELAY_MS", "2")) / 1000.0
TABLE = np.random.default_rng(8).standard_normal((4096, 64)).astype(np.float32)
ROWS = [r.tobytes().hex().encode() + b"\n" for r in TABLE]


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            key = int(line.split()[1]) % len(ROWS)
            time.sleep(DELAY)
            self.wfile.write(ROWS[key])


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    with Server(("127.0.0.1", PORT), Handler) as srv:
        srv.serve_forever()
