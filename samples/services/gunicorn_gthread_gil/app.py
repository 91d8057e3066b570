"""Object detection post-processing: 8 gunicorn request threads decode boxes in Python.

Each request runs a small NumPy "detector" (GEMMs, GIL released) and then decodes and
filters its 300 candidate boxes in plain Python loops (IoU-based suppression), which holds
the GIL. In one process the 8 threads take turns on the GIL: at most one core runs Python.
The fix is processes instead of threads (gunicorn --workers 2 --threads 4).
"""

import json

import numpy as np
from zoolib import NumpyModel

detector = NumpyModel(width=512, layers=2, batch=8)
rng = np.random.default_rng(1)
CANDIDATES = [
    (float(x), float(y), float(x + w), float(y + h), float(s))
    for x, y, w, h, s in rng.uniform([0, 0, 10, 10, 0], [600, 600, 120, 120, 1], (300, 5))
]


def overlap(a: tuple, b: tuple) -> float:
    iw = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    ih = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = iw * ih
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def keep_best(boxes: list[tuple], limit: float = 0.4) -> list[tuple]:
    kept: list[tuple] = []
    for box in sorted(boxes, key=lambda b: -b[4]):
        if all(overlap(box, k) < limit for k in kept):
            kept.append(box)
    return kept


def app(environ, start_response):  # type: ignore[no-untyped-def]
    if environ["PATH_INFO"] == "/health":
        out = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        environ["wsgi.input"].read(n)
        score = detector(list(range(32)))
        kept = keep_best(CANDIDATES)
        out = json.dumps({"boxes": len(kept), "score": score}).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))]
    )
    return [out]
