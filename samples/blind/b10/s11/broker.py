"""Tiny local job broker: hands out retrieval jobs and takes acknowledgements over TCP."""
import json
import os
import random
import socketserver
import time

PORT = int(os.environ.get("SVC_BROKER_PORT", "18861"))
DELAY = float(os.environ.get("SVC_BROKER_DELAY_MS", "2")) / 1000.0
_counter = [0]


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            cmd = line.strip()
            if cmd == b"GET":
                time.sleep(DELAY)
                _counter[0] += 1
                job = {"id": _counter[0], "seed": random.randint(0, 10**6), "k": 10}
                self.wfile.write((json.dumps(job) + "\n").encode())
            else:
                self.wfile.write(b"OK\n")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    with Server(("127.0.0.1", PORT), Handler) as srv:
        srv.serve_forever()
