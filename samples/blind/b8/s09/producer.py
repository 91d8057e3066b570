import json, os, random, sys, time

rate = float(os.environ.get("RATE", "20"))
period = 1.0 / rate
out = sys.stdout
n = 0
nxt = time.time()
while True:
    nxt += period
    d = nxt - time.time()
    if d > 0:
        time.sleep(d)
    msg = {"id": n, "ts": time.time(), "sensor": [round(random.gauss(0, 1), 4) for _ in range(24)]}
    try:
        out.write(json.dumps(msg) + "\n"); out.flush()
    except BrokenPipeError:
        break
    n += 1
