"""Local feature store: returns a 512-float feature row for a user id (line protocol over TCP)."""
import os
import socketserver
import sys
import threading
import time

import numpy as np

PORT = int(sys.argv[1])
LIFETIME = float(sys.argv[2])
LOOKUP_MS = float(os.environ.get("STORE_LOOKUP_MS", "5"))
TABLE = np.random.default_rng(3).standard_normal((4096, 512)).astype(np.float32)


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            key = int(line) % len(TABLE)
            time.sleep(LOOKUP_MS / 1000.0)
            self.wfile.write(TABLE[key].tobytes())
            self.wfile.flush()


class Store(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = Store(("127.0.0.1", PORT), Handler)
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    srv.serve_forever()
