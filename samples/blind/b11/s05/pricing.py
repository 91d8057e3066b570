"""Local pricing service: GET /price?sku=N returns a JSON price quote."""
import json
import os
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("PRICING_DELAY_MS", "60")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_GET(self):
        sku = int(self.path.split("=")[-1])
        time.sleep(DELAY)
        body = json.dumps({"sku": sku, "price": (sku % 997) / 10.0}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


srv = ThreadingHTTPServer(("127.0.0.1", PORT), H)
srv.daemon_threads = True
threading.Thread(target=srv.serve_forever, daemon=True).start()
time.sleep(LIFETIME)
