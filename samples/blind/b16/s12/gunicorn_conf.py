import os
import signal
import threading

bind = "127.0.0.1:" + os.environ.get("SVC_PORT", "18812")
workers = 2
worker_class = "gthread"
threads = 4
timeout = 60
graceful_timeout = 3
loglevel = "warning"


def when_ready(server):
    lifetime = float(os.environ.get("SVC_LIFETIME", "120"))
    threading.Timer(lifetime, lambda: os.kill(server.pid, signal.SIGTERM)).start()
