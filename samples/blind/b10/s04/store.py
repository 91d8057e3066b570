"""Local feature store: returns a user's feature vector over a line-based TCP protocol."""
import json
import os
import socketserver
import sys
import time

import numpy as np

PORT = int(os.environ.get("SVC_STORE_PORT", "18854"))
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "50")) / 1000.0
rng = np.random.default_rng(7)
TABLE = rng.standard_normal((5000, 32)).round(4)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            uid = int(line.strip() or 0) % len(TABLE)
            time.sleep(DELAY)
            self.wfile.write((json.dumps(TABLE[uid].tolist()) + "\n").encode())


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    with Server(("127.0.0.1", PORT), Handler) as srv:
        sys.stderr.write(f"store on {PORT}\n")
        srv.serve_forever()
