"""Feature drift monitor: keeps a sliding window of request features and recomputes PSI per feature."""
import math
import time
from collections import deque

N_FEAT = 16
BINS = [-2.0, -1.0, -0.5, 0.0, 0.5, 1.0, 2.0]


def _hist(col):
    counts = [1] * (len(BINS) + 1)
    for v in col:
        i = 0
        while i < len(BINS) and v > BINS[i]:
            i += 1
        counts[i] += 1
    tot = float(sum(counts))
    return [c / tot for c in counts]


def psi(ref, cur):
    return sum((c - r) * math.log(c / r) for r, c in zip(ref, cur))


def drift_loop(source, period=0.05, window=12000, report=None):
    buf = deque(maxlen=window)
    ref = None
    while True:
        t0 = time.time()
        while True:
            try:
                buf.append(source.get_nowait())
            except Exception:
                break
        if len(buf) >= 500:
            cols = list(zip(*buf))
            hists = [_hist(c) for c in cols]
            if ref is None:
                ref = hists
            scores = [psi(r, h) for r, h in zip(ref, hists)]
            if report is not None:
                report["max_psi"] = max(scores)
        time.sleep(max(0.0, period - (time.time() - t0)))
