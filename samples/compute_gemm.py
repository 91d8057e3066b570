"""compute: the model's matrix products keep every core busy, and nothing else does.

One request thread per core runs a 4-layer dense network in NumPy (float32 GEMM in
OpenBLAS, one BLAS thread per request thread so threads = cores): the CPU time is inside
the GEMM kernels, threads run rather than wait, and there is no lock to queue on.

Expected verdict: compute (kernels). Telling compute from memory bandwidth needs native
stacks (perf): without them diagnose says the time is inside the model but cannot say which
kind of kernel.
"""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import numpy as np
from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("compute/kernels", "compute/model")

RNG = np.random.default_rng(0)
WEIGHTS = [(RNG.standard_normal((512, 512)) / 23).astype(np.float32) for _ in range(4)]
X = RNG.standard_normal((256, 512)).astype(np.float32)


def forward(x):
    for w in WEIGHTS:
        x = x @ w
    return x


def handle():
    return float(forward(X)[0, 0])


if __name__ == "__main__":
    args = parse_args(__doc__, threads=len(os.sched_getaffinity(0)))
    serve("compute_gemm", handle, args.threads, args.seconds, args.quiet)
