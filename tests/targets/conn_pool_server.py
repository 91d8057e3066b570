"""A server that starts a thread per connection (socketserver's ThreadingMixIn, like Flask's
threaded server) whose handlers each borrow a client of a downstream from a pool made of a
queue, hold it for the downstream's 8 ms, and give it back. ``server POOL`` prints
"ready PORT" and serves for SECONDS; ``client PORT THREADS SECONDS`` loads it, one request
per connection.

    python conn_pool_server.py server POOL SECONDS
    python conn_pool_server.py client PORT THREADS SECONDS"""

from __future__ import annotations

import queue
import socket
import socketserver
import sys
import threading
import time

clients: queue.Queue[object] = queue.Queue()


class Handler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        line = self.rfile.readline()
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
    else:
        load(int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]))
