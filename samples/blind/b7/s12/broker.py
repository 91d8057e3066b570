"""Minimal job broker: hands out re-ranking jobs to connected consumers, one line per job, waits for acks."""
import asyncio
import json
import random
import sys

PORT = int(sys.argv[1])
PREFETCH = 2
rng = random.Random(3)
counter = [0]


def next_job():
    counter[0] += 1
    return {"job": counter[0], "seed": rng.randrange(1 << 30), "shard": rng.randrange(16), "queries": 192, "keys": 1024, "dim": 64}


async def handle(reader, writer):
    inflight = 0
    try:
        while True:
            while inflight < PREFETCH:
                writer.write((json.dumps(next_job()) + "\n").encode())
                inflight += 1
            await writer.drain()
            line = await reader.readline()
            if not line:
                break
            inflight -= 1
    except ConnectionError:
        pass
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    print("broker ready", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
