import os

bind = "127.0.0.1:18216"
workers = 3
worker_class = "sync"
timeout = 60
loglevel = "warning"


def post_fork(server, worker):
    os.environ["SVC_WORKER_INDEX"] = str(worker.age - 1)
