"""io: request threads wait on a slow dependency over a socket (a feature store, say).

Every request sends a lookup over TCP to a dependency on 127.0.0.1 that answers after
--latency-ms, then does a little work with the answer. The request threads spend their
time blocked in recv(): the dependency, not this process's CPU, sets the pace. (The
stand-in dependency runs on a thread of this process, so the sample is one process that
cleans up after itself; its threads sleep, as a remote server would be invisible.)

Expected verdict: io (dependency).
"""

import socket
import socketserver
import threading
import time

from _harness import parse_args, serve

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("io/dependency",)


def start_dependency(latency):
    """A feature store that answers every 64-byte request with 256 bytes after ``latency``."""

    class Handler(socketserver.BaseRequestHandler):
        def handle(self):
            while self.request.recv(64):
                time.sleep(latency)
                self.request.sendall(b"v" * 256)

    class Server(socketserver.ThreadingTCPServer):
        daemon_threads = True

    srv = Server(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, name="dependency", daemon=True).start()
    return srv.server_address[1]


def fetch_features(sock):
    sock.sendall(b"user-42")
    data = b""
    while len(data) < 256:
        chunk = sock.recv(256 - len(data))
        if not chunk:
            raise ConnectionError("the dependency closed the connection")
        data += chunk
    return sum(data[:16])


def extra(p):
    p.add_argument("--latency-ms", type=float, default=20.0, help="the dependency's latency")


if __name__ == "__main__":
    args = parse_args(__doc__, threads=6, extra=extra)
    port = start_dependency(args.latency_ms / 1000)
    serve(
        "io_wait",
        fetch_features,
        args.threads,
        args.seconds,
        args.quiet,
        setup=lambda i: socket.create_connection(("127.0.0.1", port)),
    )
