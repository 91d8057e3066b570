"""A threaded HTTP/1.1 server from the standard library, as small internal services run.

``serve(port, app, threads)``: ``app(method, path, body) -> (status, bytes)``. With
``threads`` a fixed pool of that many request threads serves the connections (requests
beyond that queue, as in any bounded server); without it, one thread per connection
(``ThreadingHTTPServer``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer

App = Callable[[str, str, bytes], tuple[int, bytes]]


def _handler(app: App) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        # TCP_NODELAY, as production servers set it (uvicorn, gunicorn): the headers and the
        # body go out in two writes, and with Nagle's algorithm the body waited for the
        # client's delayed ACK, 40 ms a request on some hosts, whatever the service did
        disable_nagle_algorithm = True

        def _reply(self, method: str) -> None:
            n = int(self.headers.get("Content-Length") or 0)
            status, out = app(method, self.path, self.rfile.read(n) if n else b"")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(out)))
            self.end_headers()
            self.wfile.write(out)

        def do_GET(self) -> None:
            self._reply("GET")

        def do_POST(self) -> None:
            self._reply("POST")

        def log_message(self, *args: object) -> None:
            pass

    return Handler


class PooledHTTPServer(HTTPServer):
    """Connections served by a fixed pool of request threads."""

    def __init__(self, addr: tuple[str, int], handler: type, threads: int) -> None:
        super().__init__(addr, handler)
        self.pool = ThreadPoolExecutor(threads, thread_name_prefix="request")

    def process_request(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        self.pool.submit(self._serve_one, request, client_address)

    def _serve_one(self, request, client_address) -> None:  # type: ignore[no-untyped-def]
        try:
            self.finish_request(request, client_address)
        finally:
            self.shutdown_request(request)


def serve(port: int, app: App, threads: int | None = None) -> None:
    handler = _handler(app)
    if threads:
        srv: HTTPServer = PooledHTTPServer(("127.0.0.1", port), handler, threads)
    else:
        srv = ThreadingHTTPServer(("127.0.0.1", port), handler)
        srv.daemon_threads = True
    srv.serve_forever()


def ok(doc: object) -> tuple[int, bytes]:
    return 200, json.dumps(doc).encode()
