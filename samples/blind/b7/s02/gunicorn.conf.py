import json
import os
import time

bind = "127.0.0.1:" + os.environ.get("SVC_PORT", "18521")
workers = 4
worker_class = "sync"
timeout = 120
graceful_timeout = 3
_t0 = time.time()


def on_exit(server):
    print(json.dumps({"event": "exit", "uptime_s": round(time.time() - _t0, 1)}), flush=True)
