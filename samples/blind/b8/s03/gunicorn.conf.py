import os
bind = "127.0.0.1:" + os.environ.get("SVC_PORT", "18631")
workers = int(os.environ.get("SVC_WORKERS", "1"))
threads = int(os.environ.get("SVC_THREADS", "8"))
worker_class = "gthread" if threads > 1 else "sync"
loglevel = "warning"
timeout = 60
