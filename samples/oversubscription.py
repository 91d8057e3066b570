"""scheduling: application threads x intra-op threads > cores (thread fan-out).

Every request thread owns an onnxruntime session whose intra-op pool has --intra-op
threads (the runtime's default is one per core, so on a 16-core host 16 request threads
each fan out to 16). Here 4 request threads x 4 intra-op threads = 16 threads want a CPU on
the 2 cores of a small host: they spend longer waiting in the run queue than running, and
switch constantly.

Expected verdict: scheduling (oversubscription). The fix diagnose should give: intra-op
threads = cores / application threads (1 here), or fewer application threads.
"""

import numpy as np
from _harness import parse_args, serve
from _models import mlp_session

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("scheduling/oversubscription",)


def extra(p):
    p.add_argument("--intra-op", type=int, default=4, help="intra-op threads per session")
    p.add_argument("--batch", type=int, default=16, help="rows per request")


if __name__ == "__main__":
    args = parse_args(__doc__, threads=4, extra=extra)
    x = np.random.default_rng(1).standard_normal((args.batch, 512)).astype(np.float32)

    def setup(i):
        return mlp_session(args.intra_op)  # one session, so one intra-op pool, per thread

    def handle(session):
        return session.run(None, {"x": x})[0]

    serve("oversubscription", handle, args.threads, args.seconds, args.quiet, setup=setup)
