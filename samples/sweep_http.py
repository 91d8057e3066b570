"""What the sweep samples share (not a sample itself): a threaded HTTP server with /infer
and /stats, server-side figures, and the run loop.

``POST /infer`` with ``{"text": "..."}`` (or ``GET /infer?text=...``) calls the sample's
``infer(text)`` and answers ``{"label": ...}``. ``GET /stats`` returns the service's own figures since the last reset
(requests, errors, requests/s, the most requests in flight at once, server-side P50/P99,
plus what the sample adds, e.g. its designed capacity); ``GET /stats?reset=1`` also starts
a new window. On exit (--seconds, SIGTERM, Ctrl-C) one JSON line of the same figures goes to
stdout, as the other samples print theirs.

Each keep-alive connection gets a thread of its own (the standard library's
ThreadingHTTPServer), so N concurrent clients are N request threads.
"""

import argparse
import json
import signal
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

DEFAULT_TEXT = "the quick brown fox jumps over the lazy dog and asks the model what it thinks"


def parse_args(description, extra=None):
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free one)")
    p.add_argument("--seconds", type=float, default=600.0, help="run time, then exit")
    p.add_argument("--quiet", action="store_true", help="do not print the stats line on exit")
    if extra:
        extra(p)
    return p.parse_args()


class Stats:
    """The service's own count of what it served, per window."""

    def __init__(self, name, describe=None):
        self.name = name
        self.describe = describe or dict
        self.lock = threading.Lock()
        self.total = 0
        self.in_flight = 0
        self.reset()

    def reset(self):
        self.started = time.monotonic()
        self.requests = 0
        self.errors = 0
        self.max_in_flight = self.in_flight  # requests in flight now still count
        self.latencies = []

    def begin(self):
        with self.lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def end(self, seconds, ok):
        with self.lock:
            self.in_flight -= 1
            self.requests += 1
            self.total += 1
            self.errors += 0 if ok else 1
            if len(self.latencies) < 1_000_000:
                self.latencies.append(seconds)

    def snapshot(self, reset=False):
        with self.lock:
            lat = sorted(self.latencies)
            elapsed = time.monotonic() - self.started

            def pct(q):
                return round(lat[min(len(lat) - 1, int(q * len(lat)))] * 1000, 3) if lat else None

            out = {
                "sample": self.name,
                **self.describe(),
                "seconds": round(elapsed, 3),
                "requests": self.requests,
                "errors": self.errors,
                "rps": round(self.requests / elapsed, 2) if elapsed > 0 else 0.0,
                "max_in_flight": self.max_in_flight,
                "p50_ms": pct(0.50),
                "p99_ms": pct(0.99),
                "requests_total": self.total,
            }
            if reset:
                self.reset()
            return out


def make_handler(infer, stats):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: one connection, one thread per client

        def setup(self):
            super().setup()
            # headers and body go out as two writes: without this, Nagle's algorithm holds
            # the body until the client's delayed ACK (40 ms) of the headers
            self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

        def log_message(self, *args):
            pass

        def _send(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            url = urlsplit(self.path)
            query = parse_qs(url.query)
            if url.path == "/infer":  # for load tools that send GETs (wrk without a script)
                self._infer(lambda: query.get("text", [DEFAULT_TEXT])[0])
            elif url.path == "/stats":
                self._send(200, stats.snapshot(reset=bool(query.get("reset"))))
            else:
                self._send(404, {"error": "POST /infer, GET /infer?text=..., GET /stats"})

        def do_POST(self):
            def text():
                length = int(self.headers.get("Content-Length") or 0)
                return str(json.loads(self.rfile.read(length) or b"{}").get("text", ""))

            self._infer(text)

        def _infer(self, text):
            t0 = time.perf_counter()
            stats.begin()
            ok = False
            try:
                label = infer(text())
                self._send(200, {"label": label})
                ok = True
            except (ValueError, OSError) as exc:
                self._send(400, {"error": str(exc)[:200]})
            finally:
                stats.end(time.perf_counter() - t0, ok)

    return Handler


def serve(args, infer, stats):
    """Serve until --seconds pass, SIGTERM or Ctrl-C; then print the stats line."""

    class Server(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 256  # a step's clients all connect at once

    server = Server(("127.0.0.1", args.port), make_handler(infer, stats))
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    threading.Thread(target=server.serve_forever, name="http-accept", daemon=True).start()
    sys.stderr.write(f"{stats.name}: serving on http://127.0.0.1:{server.server_address[1]}\n")
    sys.stderr.flush()
    try:
        stop.wait(args.seconds)
    except KeyboardInterrupt:
        pass
    server.shutdown()
    if not args.quiet:
        sys.stdout.write(json.dumps(stats.snapshot()) + "\n")
        sys.stdout.flush()
