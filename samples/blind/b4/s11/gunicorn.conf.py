bind = "127.0.0.1:18211"
workers = 1
worker_class = "gthread"
threads = 4
loglevel = "warning"
