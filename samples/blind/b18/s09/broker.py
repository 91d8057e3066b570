"""Minimal local job broker: each 'NEXT' line from a client is answered with one job (JSON line)."""
import json
import os
import random
import socketserver
import sys
import threading

PORT = int(sys.argv[1])
LIFETIME = float(sys.argv[2])


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        rng = random.Random()
        n = 0
        for line in self.rfile:
            if not line.startswith(b"NEXT"):
                continue
            n += 1
            job = {"job": n, "user": rng.randrange(100000), "items": [rng.randrange(50000) for _ in range(16)]}
            self.wfile.write(json.dumps(job).encode() + b"\n")
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    Server(("127.0.0.1", PORT), Handler).serve_forever()
