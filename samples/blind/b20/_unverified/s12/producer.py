"""Replays web access-log records (pipe-separated) on stdout as fast as the consumer reads them."""
import random
import sys
import time

rnd = random.Random(12)
words = ["".join(rnd.choice("abcdefghiklmnoprstuvw") for _ in range(rnd.randint(3, 10))) for _ in range(800)]
agents = [" ".join(rnd.choice(words) + "/" + str(rnd.randint(1, 120)) + "." + str(rnd.randint(0, 9))
                   for _ in range(rnd.randint(4, 8))) for _ in range(40)]
out = sys.stdout
n = 0
while True:
    path = "/" + "/".join(rnd.choice(words) for _ in range(rnd.randint(2, 6)))
    query = "&".join(f"{rnd.choice(words)}={rnd.choice(words)}" for _ in range(rnd.randint(0, 6)))
    rec = "|".join([f"{time.time():.4f}", f"u{rnd.randrange(100000)}", path + ("?" + query if query else ""),
                    rnd.choice(agents), "https://" + rnd.choice(words) + ".com/" + rnd.choice(words),
                    str(rnd.randint(200, 90000)), rnd.choice(["200", "200", "200", "304", "404", "500"])])
    try:
        out.write(rec + "\n")
        if n % 8 == 0:
            out.flush()
    except BrokenPipeError:
        break
    n += 1
