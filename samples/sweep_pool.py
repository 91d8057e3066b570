"""HTTP service whose throughput peaks at a known concurrency: --slots model lanes.

POST /infer {"text": "..."}: the request thread tokenises the text (a little Python work),
then checks out one of --slots lanes from a pool under one lock (model instances, an
accelerator's streams, a downstream model server's connections) and sends the tokens to
that lane's "model", which answers after --service-ms over a socket. A request
holds its lane for about --service-ms and the lanes use no CPU of this process while they
work, so however busy the host is:

- up to --slots concurrent requests, throughput rises linearly (concurrency / service time)
  and latency stays at about --service-ms;
- beyond --slots, throughput stays at slots / service time (4 / 100 ms = 40 requests/s by
  default) and every extra request waits for a lane: latency grows with concurrency.

So the knee of a stepped load test is at --slots concurrent requests. The service checks
this with its own figures (sweep_http.py): ``GET /stats`` returns what it served and the
capacity it was built with (``capacity_rps``), and ``max_in_flight``.

Expected verdicts: at and below the knee the request threads wait on the lanes' sockets
(io, dependency: the lanes set the pace); well past it most of them queue on the pool's
checkout lock (lock, mutex: the pool is too small for the concurrency).
"""

import os
import queue
import socket
import threading
import time

from sweep_http import Stats, parse_args, serve


def extra(p):
    p.add_argument(
        "--slots",
        type=int,
        default=int(os.environ.get("SWEEP_SLOTS", "4")),
        help="model lanes (default: $SWEEP_SLOTS or 4)",
    )
    p.add_argument("--service-ms", type=float, default=100.0, help="time a lane takes per request")


class Lane:
    """One model lane: a connection to a model that serves one request at a time."""

    def __init__(self, i, service_s):
        self.conn, theirs = socket.socketpair()
        self.service_s = service_s
        threading.Thread(
            target=self._model, args=(theirs,), name=f"model-lane-{i}", daemon=True
        ).start()

    def _model(self, sock):
        """Read a request, work for service_s (off this process's CPU), answer."""
        while True:
            data = sock.recv(65536)
            if not data:
                return
            time.sleep(self.service_s)
            sock.sendall(b"%d\n" % (sum(data) % 997))


class Lanes:
    """``slots`` lanes in a pool, checked out under one lock (a common shape: ``with
    POOL_LOCK: model = pool.get()``). Up to ``slots`` requests get a lane at once; past
    that the request in front waits in ``get()`` for a lane to come back, and every other
    one queues on ``checkout``."""

    def __init__(self, slots, service_s):
        self.slots = slots
        self.service_s = service_s
        self.free = queue.Queue()
        for i in range(slots):
            self.free.put(Lane(i, service_s))
        self.checkout = threading.Lock()

    def infer(self, tokens):
        with self.checkout:  # past --slots concurrent requests, they queue here
            lane = self.free.get()
        try:
            lane.conn.sendall(" ".join(tokens).encode()[:4096] or b"-")
            answer = lane.conn.recv(64)
        finally:
            self.free.put(lane)
        return int(answer or b"0")


def tokenize(text):
    return [w.strip(".,;:!?").lower() for w in text.split() if w.strip(".,;:!?")]


if __name__ == "__main__":
    args = parse_args(__doc__.split("\n\n")[0], extra)
    lanes = Lanes(args.slots, args.service_ms / 1000)
    describe = lambda: {  # noqa: E731
        "slots": lanes.slots,
        "service_ms": args.service_ms,
        "capacity_rps": round(lanes.slots / lanes.service_s, 2),
    }
    serve(args, lambda text: lanes.infer(tokenize(text)), Stats("sweep_pool", describe))
