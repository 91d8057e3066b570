"""A self-loading service whose request threads wait on a dependency it started itself.

The downstream store is a child process that listens on a port and answers each request
after STORE_MS; the service listens on nothing. Its 8 request threads each keep one
connection to the store, with a timeout on the socket (so CPython waits in poll(), not in
recv()), and send requests back to back. Usage: outbound_poll.py SECONDS [STORE_MS]
"""

import multiprocessing
import socket
import sys
import threading
import time


def store(port_out, delay_s):
    server = socket.create_server(("127.0.0.1", 0))
    port_out.send(server.getsockname()[1])

    def serve(conn):
        with conn:
            while conn.recv(64):
                time.sleep(delay_s)
                conn.sendall(b"features\n")

    while True:
        conn, _ = server.accept()
        threading.Thread(target=serve, args=(conn,), daemon=True).start()


def worker(port, done):
    conn = socket.create_connection(("127.0.0.1", port))
    conn.settimeout(5.0)
    while True:
        conn.sendall(b"get\n")
        conn.recv(64)
        done.append(1)


def main():
    seconds = float(sys.argv[1])
    delay_s = float(sys.argv[2]) / 1000 if len(sys.argv) > 2 else 0.04
    mine, theirs = multiprocessing.Pipe()
    child = multiprocessing.Process(target=store, args=(theirs, delay_s), daemon=True)
    child.start()
    port = mine.recv()
    done = []
    for i in range(8):
        threading.Thread(target=worker, args=(port, done), name=f"request-{i}", daemon=True).start()
    print("ready", flush=True)
    time.sleep(seconds)
    print(f'{{"requests": {len(done)}, "seconds": {seconds}}}', flush=True)
    child.kill()


if __name__ == "__main__":
    main()
