"""A server that starts a thread per connection (socketserver's ThreadingMixIn, like Flask's
threaded server) whose handlers each borrow a client of a downstream from a pool made of a
queue, hold it for the downstream's 8 ms, and give it back. ``server POOL`` prints
"ready PORT" and serves for SECONDS; ``client PORT THREADS SECONDS`` loads it, one request
per connection. ``remote MS SECONDS``: the same server whose handlers each call a downstream
(a child process answering after MS milliseconds) over a connection of their own, as a
client library without a session does.

    python conn_pool_server.py server POOL SECONDS
    python conn_pool_server.py remote MS SECONDS
    python conn_pool_server.py client PORT THREADS SECONDS"""

from __future__ import annotations

import queue
import socket
import socketserver
import subprocess
import sys
import threading
import time

clients: queue.Queue[object] = queue.Queue()
downstream: list[int] = []  # the downstream's port, in remote mode


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline()
        if downstream:
            with socket.create_connection(("127.0.0.1", downstream[0]), timeout=5) as s:
                s.sendall(line)
                s.recv(64)
            self.wfile.write(b"%d\n" % len(line))
            return
        client = clients.get()
        try:
            time.sleep(0.008)  # the downstream's round trip on the borrowed client
        finally:
            clients.put(client)
        self.wfile.write(b"%d\n" % len(line))


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(pool: int, seconds: float) -> None:
    for _ in range(pool):
        clients.put(object())
    with Server(("127.0.0.1", 0), Handler) as srv:
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        print("ready", srv.server_address[1], flush=True)
        time.sleep(seconds)
        srv.shutdown()


class Slow(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        for line in self.rfile:
            time.sleep(self.server.delay)  # type: ignore[attr-defined]
            self.wfile.write(line)


def answer(ms: float, seconds: float) -> None:
    with Server(("127.0.0.1", 0), Slow) as srv:
        srv.delay = ms / 1000  # type: ignore[attr-defined]
        threading.Thread(target=srv.serve_forever, daemon=True).start()
        print("ready", srv.server_address[1], flush=True)
        time.sleep(seconds)


def remote(ms: float, seconds: float) -> None:
    child = subprocess.Popen([sys.executable, __file__, "downstream", str(ms), str(seconds)],
                             stdout=subprocess.PIPE, text=True)  # fmt: skip
    assert child.stdout is not None
    downstream.append(int(child.stdout.readline().split()[1]))
    try:
        serve(0, seconds)
    finally:
        child.kill()


def load(port: int, threads: int, seconds: float) -> None:
    end = time.monotonic() + seconds

    def one() -> None:
        while time.monotonic() < end:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
                    s.sendall(b"x\n")
                    s.recv(64)
            except OSError:
                time.sleep(0.01)

    workers = [threading.Thread(target=one) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()


if __name__ == "__main__":
    if sys.argv[1] == "server":
        serve(int(sys.argv[2]), float(sys.argv[3]))
    elif sys.argv[1] == "remote":
        remote(float(sys.argv[2]), float(sys.argv[3]))
    elif sys.argv[1] == "downstream":
        answer(float(sys.argv[2]), float(sys.argv[3]))
    else:
        load(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
