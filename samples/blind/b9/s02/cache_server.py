"""Local feature cache: line protocol `GET <key>` -> comma-separated floats."""
import os
import socketserver
import time
import zlib

import numpy as np

DELAY = float(os.environ.get("SVC_CACHE_DELAY_MS", "6")) / 1000.0
DIM = 64


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            parts = line.split()
            if len(parts) != 2:
                self.wfile.write(b"ERR\n")
                continue
            rng = np.random.default_rng(zlib.crc32(parts[1]))
            vec = rng.standard_normal(DIM).astype(np.float32)
            time.sleep(DELAY)
            self.wfile.write((",".join(f"{x:.5f}" for x in vec) + "\n").encode())
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(os.environ["CACHE_PORT"])), Handler).serve_forever()
