"""Local feature store: answers 'GET <key>' lines with a JSON feature vector."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "20")) / 1000.0
random.seed(1)
TABLE = {i: [round(random.gauss(0, 1), 4) for _ in range(32)] for i in range(5000)}


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = int(line.split()[1]) % 5000
        await asyncio.sleep(DELAY)
        writer.write((json.dumps(TABLE[key]) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with server:
        await server.serve_forever()


asyncio.run(main())
