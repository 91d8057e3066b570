"""A self-loading service whose request latency is a prometheus-client histogram, and whose
requests slow down while a flag file exists (tests/e2e/test_watch_drift.py).

Its 2 request threads each "serve" requests back to back: a request takes FAST_MS, or SLOW_MS
while FLAG exists, and its latency goes into ``drift_sample_request_seconds``, served on
127.0.0.1:PORT/metrics for Prometheus to scrape. Usage:
latency_service.py SECONDS PORT FLAG [FAST_MS SLOW_MS]
"""

import os
import sys
import threading
import time

from prometheus_client import Histogram, start_http_server

LATENCY = Histogram("drift_sample_request_seconds", "Latency of the sample's requests.")


def serve(flag, fast_s, slow_s):
    while True:
        start = time.perf_counter()
        time.sleep(slow_s if os.path.exists(flag) else fast_s)
        LATENCY.observe(time.perf_counter() - start)


def main():
    seconds, port, flag = float(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    fast_ms, slow_ms = (float(x) for x in sys.argv[4:6]) if len(sys.argv) > 5 else (5.0, 80.0)
    start_http_server(port, "127.0.0.1")
    for i in range(2):
        args = (flag, fast_ms / 1000, slow_ms / 1000)
        threading.Thread(target=serve, args=args, name=f"request-{i}", daemon=True).start()
    print("ready", flush=True)
    time.sleep(seconds)


if __name__ == "__main__":
    main()
