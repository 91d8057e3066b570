"""lock (GIL): request threads run pure-Python post-processing, so they queue for the GIL.

Each request decodes candidate boxes and runs non-maximum suppression in plain Python
loops (no NumPy): bytecode, which only one thread at a time may run. 6 request threads
on 2 cores: one holds the GIL, the others are blocked on it, and the process uses about one
core however many threads it has.

Expected verdict: lock (gil). The fix diagnose should give: move the CPU-bound Python work
to processes, or vectorise it into native code that releases the GIL.
"""

import random

from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("lock/gil",)

RNG = random.Random(0)
CANDIDATES = [
    (RNG.random() * 600, RNG.random() * 600, 20 + RNG.random() * 80, 20 + RNG.random() * 80,
     RNG.random())
    for _ in range(160)
]  # fmt: skip


def iou(a, b):
    ax1, ay1, ax2, ay2 = a[0], a[1], a[0] + a[2], a[1] + a[3]
    bx1, by1, bx2, by2 = b[0], b[1], b[0] + b[2], b[1] + b[3]
    iw = max(0.0, min(ax2, bx2) - max(ax1, bx1))
    ih = max(0.0, min(ay2, by2) - max(ay1, by1))
    inter = iw * ih
    return inter / (a[2] * a[3] + b[2] * b[3] - inter)


def non_max_suppression(boxes, threshold=0.4):
    keep = []
    for box in sorted(boxes, key=lambda b: -b[4]):
        if all(iou(box, k) < threshold for k in keep):
            keep.append(box)
    return keep


def postprocess():
    boxes = [(x, y, w, h, s) for x, y, w, h, s in CANDIDATES if s > 0.05]
    return len(non_max_suppression(boxes))


if __name__ == "__main__":
    args = parse_args(__doc__, threads=6)
    serve("gil_contention", postprocess, args.threads, args.seconds, args.quiet)
