"""Background index maintenance: repeatedly re-quantises the embedding index and rebuilds
coarse centroids. Runs for a fixed lifetime."""
import os
import sys
import time

import numpy as np

LIFETIME = float(sys.argv[1])
NICE = int(sys.argv[2]) if len(sys.argv) > 2 else 0
if NICE:
    os.nice(NICE)
rng = np.random.default_rng(os.getpid())
emb = rng.standard_normal((20000, 64)).astype(np.float32)
cent = emb[:256].copy()
end = time.time() + LIFETIME
while time.time() < end:
    d = emb @ cent.T
    assign = d.argmax(axis=1)
    for c in range(0, 256, 32):
        m = assign == c
        if m.any():
            cent[c] = emb[m].mean(axis=0)
    q = np.clip(np.round(emb * 32), -127, 127).astype(np.int8)
    emb = (q.astype(np.float32) / 32 + rng.standard_normal(emb.shape).astype(np.float32) * 0.01)
