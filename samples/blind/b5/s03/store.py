"""Tiny user-feature store: line protocol over TCP ("GET <user>\\n" -> JSON list)."""
import asyncio
import json
import os
import random

PORT = int(os.environ.get("STORE_PORT", "18353"))
DELAY = float(os.environ.get("STORE_DELAY_MS", "6")) / 1000.0
DIM = 64


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = line.decode().split()[-1]
        rnd = random.Random(key)
        await asyncio.sleep(DELAY)  # disk/replica read
        vec = [round(rnd.gauss(0, 1), 4) for _ in range(DIM)]
        writer.write((json.dumps(vec) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
