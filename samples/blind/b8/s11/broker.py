import json, random, socketserver, sys, time


class H(socketserver.StreamRequestHandler):
    def handle(self):
        n = 0
        for line in self.rfile:
            cmd = line.strip()
            if cmd == b"NEXT":
                job = {"id": n, "ts": time.time(), "offset": random.randrange(0, 3072), "scale": random.uniform(0.5, 2)}
                self.wfile.write((json.dumps(job) + "\n").encode()); self.wfile.flush()
                n += 1
            elif cmd.startswith(b"DONE"):
                pass


class S(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
