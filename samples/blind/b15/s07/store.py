"""Feature store: line protocol over TCP, returns a user's feature vector."""
import asyncio
import os
import random
import sys
import time

PORT = int(os.environ.get("SVC_STORE_PORT", "18857"))
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "40")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60")) + 5


async def handle(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            key = line.decode().split()[-1]
            await asyncio.sleep(DELAY)
            rnd = random.Random(key)
            vals = " ".join(f"{rnd.random():.4f}" for _ in range(32))
            writer.write((vals + "\n").encode())
            await writer.drain()
    except ConnectionError:
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", PORT)
    parent = os.getppid()
    t_end = time.time() + LIFETIME
    async with server:
        while time.time() < t_end and os.getppid() == parent:
            await asyncio.sleep(0.5)


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
