"""Index rebuild job: recompresses index shards in four processes until done or the owner exits."""
import multiprocessing as mp
import os
import sys
import time
import zlib


def shard_loop(owner, until, seed):
    data = bytes((i * 2654435761 + seed) % 251 for i in range(1 << 20))
    while time.time() < until:
        try:
            os.kill(owner, 0)
        except ProcessLookupError:
            return
        for _ in range(4):
            zlib.compress(data, 6)


if __name__ == "__main__":
    owner, life = int(sys.argv[1]), float(sys.argv[2])
    until = time.time() + life
    ps = [mp.Process(target=shard_loop, args=(owner, until, s)) for s in range(4)]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
