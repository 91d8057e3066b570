"""Local feature store: answers `GET <key>` lines with a JSON vector of features."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
DELAY_MS = float(sys.argv[2])
LIFETIME = float(sys.argv[3])


async def serve(reader, writer):
    rng = random.Random()
    while True:
        line = await reader.readline()
        if not line:
            break
        key = line.decode().split()[-1]
        await asyncio.sleep(DELAY_MS / 1000.0)
        vec = [round(rng.random(), 4) for _ in range(32)]
        writer.write((json.dumps({"key": key, "f": vec}) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with server:
        await asyncio.sleep(LIFETIME)


asyncio.run(main())
