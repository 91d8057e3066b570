"""Local inventory service: GET /stock/<sku> returns stock levels as JSON."""
import json
import os
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

DELAY = float(os.environ.get("INVENTORY_DELAY_MS", "80")) / 1000.0


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        sku = int(self.path.rsplit("/", 1)[-1])
        time.sleep(DELAY)
        body = json.dumps({"sku": sku, "stock": [(sku * 7 + i) % 50 for i in range(8)]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


ThreadingHTTPServer.daemon_threads = True
ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
