"""Tiny job broker stand-in: hands out cohort-analysis jobs to consumers that ask with NEXT, takes ACKs."""
import json
import os
import random
import socketserver
import time

PORT = int(os.environ.get("BROKER_PORT", "18462"))
rnd = random.Random(5)
TAGS = ["new", "churn", "vip", "mobile", "web", "promo", "trial", "eu", "us", "apac"]
TEMPLATES = []
for _ in range(16):
    cohort = [{"uid": rnd.randrange(50000), "w": round(rnd.random(), 4), "tags": rnd.sample(TAGS, 3)}
              for _ in range(2048)]
    TEMPLATES.append(json.dumps(cohort))


class H(socketserver.StreamRequestHandler):
    def handle(self):
        n = 0
        for line in self.rfile:
            if line.startswith(b"NEXT"):
                n += 1
                msg = '{"id": %d, "ts": %.6f, "cohort": %s}\n' % (n, time.time(), TEMPLATES[n % 16])
                self.wfile.write(msg.encode())
                self.wfile.flush()


class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    S(("127.0.0.1", PORT), H).serve_forever()
