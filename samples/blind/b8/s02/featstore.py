import json, os, random, socketserver, sys, time

DELAY = float(os.environ.get("FS_DELAY_MS", "12")) / 1000.0
rng = random.Random(7)
TABLE = {i: [round(rng.uniform(-1, 1), 4) for _ in range(64)] for i in range(2000)}


class H(socketserver.StreamRequestHandler):
    def handle(self):
        for line in self.rfile:
            key = int(line.strip() or 0) % 2000
            time.sleep(DELAY)
            self.wfile.write((json.dumps(TABLE[key]) + "\n").encode())
            self.wfile.flush()


class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
