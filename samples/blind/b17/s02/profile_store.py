"""Local profile store: line protocol over TCP, one JSON reply per 'GET <key>' line."""
import json
import os
import random
import socketserver
import sys
import threading
import time

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "6")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            key = line.decode().strip().partition(" ")[2]
            time.sleep(DELAY)
            rnd = random.Random(key)
            reply = {"key": key, "segment": rnd.randrange(16), "weights": [round(rnd.random(), 3) for _ in range(16)]}
            self.wfile.write((json.dumps(reply) + "\n").encode())
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    Server(("127.0.0.1", PORT), Handler).serve_forever()
