"""Request threads that split each request into pieces of a few hundred microseconds of
Python work and run every piece on a thread: ``spawn`` starts one per piece and joins it (a
thread per piece of work), ``pool`` hands the pieces to a pool created once. Prints "ready",
then runs SECONDS.

    python thread_per_piece.py spawn|pool SECONDS [REQUEST_THREADS] [PIECES]"""

from __future__ import annotations

import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor


def piece(n: int) -> int:
    return sum(i * i for i in range(n))


def serve(mode: str, stop: threading.Event, pieces: int, pool: ThreadPoolExecutor) -> None:
    while not stop.is_set():
        if mode == "spawn":
            threads = [threading.Thread(target=piece, args=(300,)) for _ in range(pieces)]
            for t in threads:
                t.start()
            for t in threads:
                t.join()
        else:
            list(pool.map(piece, [300] * pieces))


def main() -> None:
    mode, seconds = sys.argv[1], float(sys.argv[2])
    workers = int(sys.argv[3]) if len(sys.argv) > 3 else 4
    pieces = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    stop = threading.Event()
    with ThreadPoolExecutor(4) as pool:
        for _ in range(workers):
            threading.Thread(target=serve, args=(mode, stop, pieces, pool), daemon=True).start()
        print("ready", flush=True)
        time.sleep(seconds)
        stop.set()


if __name__ == "__main__":
    main()
