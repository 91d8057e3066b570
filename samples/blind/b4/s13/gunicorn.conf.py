bind = "127.0.0.1:18213"
workers = 2
worker_class = "gthread"
threads = 4
loglevel = "warning"
