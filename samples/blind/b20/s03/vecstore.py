"""Embedding lookup server: `<key>\n` -> 32 little-endian float32s, one thread per connection."""
import os
import socketserver
import struct
import sys
import threading
import time
import zlib

PORT = int(sys.argv[1])
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
DIM = 32


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            seed = zlib.crc32(line.strip())
            time.sleep(0.003)
            vals = [((seed * (i + 1)) % 2000) / 1000.0 - 1.0 for i in range(DIM)]
            self.wfile.write(struct.pack(f"<{DIM}f", *vals))
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", PORT), Handler)
threading.Timer(LIFETIME, lambda: os._exit(0)).start()
srv.serve_forever()
