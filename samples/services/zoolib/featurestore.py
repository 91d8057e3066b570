"""A feature store stand-in: a TCP server that answers each request after a fixed latency.

Line protocol: the client sends ``KEY\\n``, the server sleeps ``latency_ms`` and answers
with 64 comma-separated floats and ``\\n``. One thread per connection, so it is never the
limit itself; its latency is: ``--latency-ms``, else FEATURE_MS (the knob of the io counterfactuals).
"""

from __future__ import annotations

import argparse
import os
import socket
import socketserver
import time


class _Handler(socketserver.StreamRequestHandler):
    latency_s = 0.05

    def handle(self) -> None:
        for line in self.rfile:
            time.sleep(self.latency_s)
            key = line.strip() or b"0"
            row = ",".join(str((hash(key) + i) % 97 / 97) for i in range(64))
            self.wfile.write(row.encode() + b"\n")


class _Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(port: int, latency_ms: float | None = None) -> None:
    if latency_ms is None:
        latency_ms = float(os.environ.get("FEATURE_MS", "50"))
    _Handler.latency_s = latency_ms / 1000
    with _Server(("127.0.0.1", port), _Handler) as srv:
        srv.serve_forever()


class Client:
    """One connection to the store (not thread-safe: one per thread, or a pool)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.file = self.sock.makefile("rb")

    def get(self, key: str) -> list[float]:
        self.sock.sendall(key.encode() + b"\n")
        return [float(x) for x in self.file.readline().split(b",")]


def wait_ready(port: int, timeout: float = 10.0) -> None:
    end = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--latency-ms", type=float, help="default: $FEATURE_MS, else 50")
    a = p.parse_args()
    serve(a.port, a.latency_ms)
