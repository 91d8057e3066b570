"""Local feature-store stand-in: line protocol over TCP, one thread per connection, ~8 ms per lookup."""
import json
import os
import socketserver
import time

import numpy as np

PORT = int(os.environ.get("FS_PORT", "18453"))
DELAY = float(os.environ.get("FS_DELAY_MS", "8")) / 1000.0
rng = np.random.default_rng(3)
TABLE = rng.standard_normal((5000, 32)).round(4)


class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            uid = int(line.strip() or 0)
            time.sleep(DELAY)  # disk-backed lookup
            self.wfile.write((json.dumps(TABLE[uid % 5000].tolist()) + "\n").encode())
            self.wfile.flush()


class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    S(("127.0.0.1", PORT), H).serve_forever()
