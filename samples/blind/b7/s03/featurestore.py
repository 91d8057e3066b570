"""Tiny feature store: line protocol over TCP, 'GET user_id\n' -> JSON features. Lookups take a few ms."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("FS_DELAY_MS", "6")) / 1000.0
rng = random.Random(1)
TABLE = {i: [round(rng.uniform(-1, 1), 4) for _ in range(32)] for i in range(5000)}


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        uid = int(line.split()[1]) % 5000
        await asyncio.sleep(DELAY)
        writer.write((json.dumps(TABLE[uid]) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    print("featurestore ready", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
