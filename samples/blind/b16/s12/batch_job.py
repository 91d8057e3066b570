"""Nightly re-embedding batch job co-located on the host: N processes multiplying blocks of embeddings."""
import os
import sys
import time

import numpy as np

procs = int(os.environ.get("SVC_NEIGHBOUR_PROCS", "0"))
lifetime = float(sys.argv[1])
parent = os.getppid()
os.environ["OPENBLAS_NUM_THREADS"] = "1"


def run(owner):
    rng = np.random.default_rng(os.getpid())
    a = rng.standard_normal((384, 384)).astype(np.float32)
    end = time.time() + lifetime
    while time.time() < end and os.getppid() == owner:
        for _ in range(20):
            a = np.tanh(a @ a.T * 0.01)


me = os.getpid()
kids = []
for _ in range(procs):
    pid = os.fork()
    if pid == 0:
        try:
            run(me)
        finally:
            os._exit(0)
    kids.append(pid)
end = time.time() + lifetime
while time.time() < end and os.getppid() == parent:
    time.sleep(0.5)
for k in kids:
    try:
        os.kill(k, 15)
    except ProcessLookupError:
        pass
