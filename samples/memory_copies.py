"""memory_bandwidth: requests spend their CPU time copying and converting large arrays.

Each request takes a 1080p-sized frame batch, converts its dtype (uint8 -> float32),
changes layout from NHWC to NCHW with a copying transpose, scales it elementwise, and
copies the result into a staging buffer, as an unoptimised input pipeline does before the
model. Those kernels do one or two operations per byte: they run at the speed of memory,
not of the cores. One request thread per core; NumPy releases the GIL in all of them.

Expected verdict: memory_bandwidth (memory_kernels). Telling memory-bound kernels from
compute needs native stacks (perf).
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from _harness import parse_args, serve

RNG = np.random.default_rng(0)
FRAMES = RNG.integers(0, 255, (4, 540, 960, 3), dtype=np.uint8)


def stage_input(frames, out):
    x = frames.astype(np.float32)  # dtype conversion: a full copy
    x = np.ascontiguousarray(x.transpose(0, 3, 1, 2))  # NHWC -> NCHW: a strided copy
    np.multiply(x, 1.0 / 255.0, out=x)  # elementwise scale
    np.copyto(out, x)  # into the staging buffer
    return out


def make_handler():
    out = np.empty((4, 3, 540, 960), dtype=np.float32)
    return lambda: stage_input(FRAMES, out)


if __name__ == "__main__":
    args = parse_args(__doc__, threads=len(os.sched_getaffinity(0)))
    serve(
        "memory_copies",
        lambda h: float(h()[0, 0, 0, 0]),
        args.threads,
        args.seconds,
        args.quiet,
        setup=lambda i: make_handler(),
    )
