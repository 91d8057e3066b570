"""Small key-value store used by the service."""
import argparse
import socketserver
import time


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        data = self.server.data
        delay = self.server.delay
        for line in self.rfile:
            parts = line.decode().rstrip("\n").split(" ", 2)
            if delay:
                time.sleep(delay)
            if parts[0] == "SET" and len(parts) == 3:
                data[parts[1]] = parts[2]
                self.wfile.write(b"OK\n")
            elif parts[0] == "GET" and len(parts) >= 2:
                self.wfile.write((data.get(parts[1], "") + "\n").encode())
            else:
                self.wfile.write(b"ERR\n")


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--delay-ms", type=float, default=0.0)
    ap.add_argument("--users", type=int, default=0)
    ap.add_argument("--dim", type=int, default=64)
    a = ap.parse_args()
    srv = Server(("127.0.0.1", a.port), Handler)
    srv.data = {}
    if a.users:
        import json
        import random
        r = random.Random(1)
        for u in range(a.users):
            srv.data[f"user:{u}"] = json.dumps([round(r.gauss(0, 1), 4) for _ in range(a.dim)]).replace(" ", "")
    srv.delay = a.delay_ms / 1000.0
    srv.serve_forever()
