"""Local blob store: GET <key> returns a length-prefixed image."""
import io
import socketserver
import struct
import sys
import time

import numpy as np
from PIL import Image

DELAY = float(sys.argv[2]) / 1000.0
BLOBS = []
for i in range(16):
    arr = np.random.default_rng(i).integers(0, 255, (24, 32, 3), dtype=np.uint8)
    b = io.BytesIO()
    Image.fromarray(arr).resize((320, 240)).save(b, format="JPEG", quality=80)
    BLOBS.append(b.getvalue())


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            key = line.strip().decode()
            time.sleep(DELAY)
            blob = BLOBS[hash(key) % len(BLOBS)]
            self.wfile.write(struct.pack("!I", len(blob)) + blob)


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
