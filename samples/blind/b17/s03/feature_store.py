"""Local feature store: returns user feature vectors over HTTP."""
import json
import os
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "80")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        time.sleep(DELAY)
        uid = self.path.rsplit("/", 1)[-1]
        rnd = random.Random(uid)
        body = json.dumps({"id": uid, "f": [round(rnd.random(), 4) for _ in range(32)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    srv.daemon_threads = True
    srv.serve_forever()
