import multiprocessing as mp
import os, random, threading, time
from flask import Flask, jsonify, request

REFRESH = os.environ.get("SVC_REFRESH", "thread")
N_ITEMS = 400000
N_FEAT = 16


def rebuild_index(seed):
    rng = random.Random(seed)
    items = [(rng.random(), i) for i in range(N_ITEMS)]
    ranked = sorted(items, reverse=True)
    return [i for _, i in ranked[:500]]


class Catalog:
    def __init__(self):
        self.top = rebuild_index(0)
        self.version = 0

    def refresh_forever(self):
        n = 1
        while True:
            if REFRESH == "thread":
                top = rebuild_index(n)
            else:
                with mp.get_context("fork").Pool(1) as p:
                    while True:
                        self.top = p.apply(rebuild_index, (n,)); self.version = n; n += 1
                        time.sleep(0.05)
            self.top = top; self.version = n; n += 1
            time.sleep(0.05)


catalog = Catalog()
rng0 = random.Random(1)
WEIGHTS = [[rng0.uniform(-1, 1) for _ in range(N_FEAT)] for _ in range(8)]
app = Flask(__name__)
_started = []


@app.before_request
def _start_refresher():
    if not _started:
        _started.append(1)
        threading.Thread(target=catalog.refresh_forever, daemon=True).start()


@app.post("/predict")
def predict():
    body = request.get_json()
    x = body["features"]
    scores = [sum(w * v for w, v in zip(ws, x)) for ws in WEIGHTS]
    cands = catalog.top[:50]
    return jsonify({"scores": scores, "candidates": cands[:10], "version": catalog.version})


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


threading.Thread(target=_expire, daemon=True).start()
