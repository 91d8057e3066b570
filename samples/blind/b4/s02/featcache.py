"""Feature cache process: answers GET <key> with a feature vector."""
import socketserver
import sys
import time
import zlib


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        delay = float(sys.argv[2]) / 1000.0
        for line in self.rfile:
            key = line.strip().split(b" ", 1)[-1]
            time.sleep(delay)  # storage read
            h = zlib.crc32(key)
            vals = ",".join(str(((h >> (i % 24)) & 255) / 255.0) for i in range(32))
            self.wfile.write(vals.encode() + b"\n")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
