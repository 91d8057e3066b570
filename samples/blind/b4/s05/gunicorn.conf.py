bind = "127.0.0.1:18205"
workers = 2
worker_class = "sync"
timeout = 60
loglevel = "warning"
