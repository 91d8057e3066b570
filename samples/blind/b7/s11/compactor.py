"""Housekeeping job shipped with the worker: compacts and re-compresses the event log segments."""
import os
import random
import sys
import time
import zlib
from multiprocessing import Process


def compact(seed):
    rng = random.Random(seed)
    segs = [bytes(rng.getrandbits(8) % 64 + 32 for _ in range(200_000)) for _ in range(4)]
    n = 0
    while True:
        for s in segs:
            z = zlib.compress(s, 9)
            n += len(zlib.decompress(z))
        segs.sort(key=lambda b: zlib.crc32(b[:4096]) ^ n)


if __name__ == "__main__":
    os.nice(int(os.environ.get("COMPACTOR_NICE", "0")))
    ps = [Process(target=compact, args=(i,), daemon=True) for i in range(int(sys.argv[1]))]
    for p in ps:
        p.start()
    for p in ps:
        p.join()
