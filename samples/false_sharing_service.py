"""memory_bandwidth (false sharing): per-worker counters in one shared NumPy array.

Request threads score each request's features in a small C library (compiled at run time
with gcc, loaded with ctypes, which releases the GIL) that also counts, per item, the
items and positive items of the calling worker in ``STATS[worker]``: a NumPy int64 array
of shape (workers, 2). Rows of 16 bytes: four workers share one 64-byte cache line, so the
workers, running in parallel, take the line from each other on every count although each
writes only its own row. With --pad each row is 64 bytes (shape (workers, 8), the array
aligned to 64 bytes): one line per worker, the fix.

Expected verdict with ``diagnose attach PID --false-sharing``: memory_bandwidth
(false_sharing) naming the STATS line, its two offsets and both workers; with --pad, no
false-sharing finding.
"""

import ctypes

import numpy as np
from _harness import parse_args, serve
from _native import build

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("memory_bandwidth/false_sharing",)

ITEMS = 200_000  # features per request
LINE = 64


def aligned_rows(workers: int, stride: int) -> np.ndarray:
    """A (workers, stride) int64 array whose first byte is on a 64-byte boundary."""
    raw = np.zeros(workers * stride + LINE // 8, dtype=np.int64)
    skip = (-raw.ctypes.data % LINE) // 8
    return raw[skip : skip + workers * stride].reshape(workers, stride)


def main():
    args = parse_args(
        __doc__,
        threads=2,
        extra=lambda p: p.add_argument(
            "--pad", action="store_true", help="one 64-byte cache line per worker's row (the fix)"
        ),
    )
    lib = ctypes.CDLL(str(build("false_sharing_stats.c", shared=True)))
    lib.score_request.restype = ctypes.c_double
    lib.score_request.argtypes = [ctypes.c_void_p, ctypes.c_long, ctypes.c_void_p,
                                  ctypes.c_long, ctypes.c_long]  # fmt: skip
    stride = 8 if args.pad else 2
    stats = aligned_rows(args.threads, stride)
    rng = np.random.default_rng(0)

    def setup(worker):
        features = rng.random(ITEMS, dtype=np.float32)
        return worker, features

    def handle(state):
        worker, features = state
        return lib.score_request(features.ctypes.data, ITEMS, stats.ctypes.data, stride, worker)

    serve("false_sharing_service", handle, args.threads, args.seconds, args.quiet,
          thread_name="worker", setup=setup)  # fmt: skip


if __name__ == "__main__":
    main()
