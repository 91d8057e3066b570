"""Background index compaction: repeatedly merges and re-sorts posting-list segments."""
import sys
import time

import numpy as np

LIFETIME = float(sys.argv[1])
deadline = time.time() + LIFETIME
rng = np.random.default_rng()
while time.time() < deadline:
    segs = [rng.integers(0, 1 << 30, size=200_000) for _ in range(4)]
    merged = np.unique(np.concatenate(segs))
    _ = np.searchsorted(merged, segs[0])
