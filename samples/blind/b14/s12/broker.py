"""Local job broker: each `NEXT` line is answered with one JSON job (a batch of review texts)."""
import json
import random
import socketserver
import sys

WORDS = ["great", "terrible", "battery", "screen", "delivery", "quality", "price", "support", "broken",
         "excellent", "slow", "fast", "return", "refund", "charger", "sound", "camera", "cheap", "works",
         "perfect", "disappointed", "recommend", "never", "again", "love", "hate", "size", "colour"]
rnd = random.Random(5)


def review():
    words = [rnd.choice(WORDS) + rnd.choice(["", "", "s", "ed", "ing"]) for _ in range(rnd.randint(200, 400))]
    for i in range(0, len(words), 9):
        words[i] = words[i].capitalize() + rnd.choice([",", ".", "!", "?", ""])
    return " ".join(words) + " Café naïve résumé!!"


REVIEWS = [review() for _ in range(512)]


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        n = 0
        for line in self.rfile:
            if not line.startswith(b"NEXT"):
                break
            n += 1
            job = {"id": n, "texts": [REVIEWS[rnd.randrange(len(REVIEWS))] for _ in range(16)]}
            self.wfile.write(json.dumps(job).encode() + b"\n")
            self.wfile.flush()


class Server(socketserver.ThreadingTCPServer):
    allow_reuse_address = True
    daemon_threads = True


Server(("127.0.0.1", int(sys.argv[1])), Handler).serve_forever()
