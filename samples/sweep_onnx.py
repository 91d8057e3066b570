"""HTTP variant of oversubscription.py: request threads x intra-op threads > cores.

POST /infer {"text": "..."}: every request thread (one per keep-alive connection, so one per
concurrent client) owns an onnxruntime session of a small MLP whose intra-op pool has
--intra-op threads, and runs a --batch x 512 input through it. With the default of 4 (what
a config written on a 4-core laptop says; onnxruntime's own default is one thread per core),
N concurrent clients put N x 4 threads on the cores: on a 2-core host, past one client the
threads wait in the run queue longer than they run, and throughput falls as clients rise.

The fix is a setting: --intra-op 1 (or INTRA_OP_THREADS=1 in the environment), so that
request threads x intra-op threads <= cores, which ``diagnose sweep --run --vary`` finds:

    diagnose sweep --run --vary INTRA_OP_THREADS=4,1 --load samples/sweep_locustfile.py \\
        --host http://127.0.0.1:8000 --steps 1,2,4,8 -- python samples/sweep_onnx.py

Expected verdicts: scheduling (oversubscription) past one client with the default; with
--intra-op 1, compute (the model's kernels) once the clients fill the cores.
"""

import os
import threading

import numpy as np
from _models import mlp_model_bytes, mlp_session
from sweep_http import Stats, parse_args, serve


def extra(p):
    p.add_argument(
        "--intra-op",
        type=int,
        default=int(os.environ.get("INTRA_OP_THREADS", "4")),
        help="intra-op threads per session (default: $INTRA_OP_THREADS or 4)",
    )
    p.add_argument("--batch", type=int, default=32, help="rows per request")


if __name__ == "__main__":
    args = parse_args(__doc__.split("\n\n")[0], extra)
    mlp_model_bytes()  # fail early if onnx is missing
    x = np.random.default_rng(1).standard_normal((args.batch, 512)).astype(np.float32)
    local = threading.local()

    def infer(text):
        session = getattr(local, "session", None)
        if session is None:  # one session, so one intra-op pool, per request thread
            session = local.session = mlp_session(args.intra_op)
        y = session.run(None, {"x": x * (1 + len(text) % 7)})[0]
        return int(np.argmax(y[0]))

    describe = lambda: {"intra_op_threads": args.intra_op, "batch": args.batch}  # noqa: E731
    serve(args, infer, Stats("sweep_onnx", describe))
