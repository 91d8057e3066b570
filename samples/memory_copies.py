"""memory_bandwidth: requests spend their CPU time copying and converting large arrays.

Each request takes a batch of four 960x540 RGB frames, converts it from uint8 to float32,
changes its layout from NHWC to NCHW with a strided copy, scales it elementwise and copies
the result into a staging buffer, as an unoptimised input pipeline does before the model.
Those kernels do one or two operations per byte: they run at the speed of memory, not of
the cores. Buffers are allocated once per thread, so the time is in the copy kernels, not
in the allocator or page faults. One request thread per core; NumPy releases the GIL in
all of them.

Expected verdict: memory_bandwidth (memory_kernels). Telling memory-bound kernels from
compute needs native stacks (perf): without them no Python frame names this work, and
diagnose says so instead of guessing.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np
from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("memory_bandwidth/memory_kernels",)

FRAMES = np.random.default_rng(0).integers(0, 255, (4, 540, 960, 3), dtype=np.uint8)


def make_stage():
    """One thread's input stage, with its buffers preallocated."""
    f32 = np.empty(FRAMES.shape, dtype=np.float32)
    nchw = np.empty((4, 3, 540, 960), dtype=np.float32)
    staging = np.empty_like(nchw)

    def stage_input():
        np.copyto(f32, FRAMES, casting="unsafe")  # dtype conversion
        np.copyto(nchw, f32.transpose(0, 3, 1, 2))  # NHWC -> NCHW: a strided copy
        np.multiply(nchw, 1.0 / 255.0, out=nchw)  # elementwise scale
        np.copyto(staging, nchw)  # into the staging buffer
        return float(staging[0, 0, 0, 0])

    return stage_input


if __name__ == "__main__":
    args = parse_args(__doc__, threads=len(os.sched_getaffinity(0)))
    serve(
        "memory_copies",
        lambda stage: stage(),
        args.threads,
        args.seconds,
        args.quiet,
        setup=lambda i: make_stage(),
    )
