"""Local user-profile service: GET /profile/<id> returns a JSON feature vector."""
import json
import random
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
DELAY_MS = float(sys.argv[2])
LIFETIME = float(sys.argv[3])


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def do_GET(self):
        time.sleep(DELAY_MS / 1000.0)
        uid = self.path.rsplit("/", 1)[-1]
        rng = random.Random(uid)
        body = json.dumps({"id": uid, "f": [round(rng.random(), 4) for _ in range(16)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
srv.daemon_threads = True
threading.Timer(LIFETIME, srv.shutdown).start()
srv.serve_forever()
