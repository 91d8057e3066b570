bind = "127.0.0.1:18202"
workers = 1
worker_class = "gthread"
threads = 8
loglevel = "warning"
