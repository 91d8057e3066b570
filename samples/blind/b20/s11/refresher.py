"""Background catalogue refresher: periodically recomputes item-item co-visitation similarities."""
import os
import time

import numpy as np

LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
stop = time.time() + LIFETIME
rng = np.random.default_rng(8)
items = rng.standard_normal((1500, 256)).astype(np.float32)
rounds = 0
while time.time() < stop:
    sims = items @ items.T
    np.fill_diagonal(sims, -np.inf)
    nbrs = np.argmax(sims, axis=1)
    items[rounds % 1500] = 0.9 * items[rounds % 1500] + 0.1 * items[nbrs[rounds % 1500]]
    rounds += 1
