"""Local job broker: hands out scoring jobs over TCP (line protocol: NEXT -> job JSON, DONE <id> -> OK)."""
import json
import os
import random
import socketserver
import sys
import threading
import time

PORT = int(sys.argv[1])
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60")) + 5
rnd = random.Random(8)
JOBS = [json.dumps({"id": i, "x": [round(rnd.gauss(0, 1), 3) for _ in range(256)]}) for i in range(200)]


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        n = 0
        for line in self.rfile:
            if line.startswith(b"NEXT"):
                self.wfile.write((JOBS[n % 200] + "\n").encode())
                n += 1
            else:
                self.wfile.write(b"OK\n")
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


srv = Server(("127.0.0.1", PORT), Handler)
threading.Timer(LIFETIME, srv.shutdown).start()
srv.serve_forever()
