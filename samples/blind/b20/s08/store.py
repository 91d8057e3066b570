"""Local feature store: answers `GET <key>` lines with a comma-separated feature row."""
import asyncio
import os
import random
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "50")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
DIM = 64


def row(key):
    r = random.Random(key)
    return ",".join(f"{r.uniform(-1, 1):.4f}" for _ in range(DIM))


async def handle(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            key = line.decode().split()[-1]
            await asyncio.sleep(DELAY)
            writer.write((row(key) + "\n").encode())
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME)


asyncio.run(main())
