"""Pricing backend: answers one JSON request per line after its lookup time."""
import asyncio
import json
import random
import sys

DELAY = float(sys.argv[2]) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        req = json.loads(line)
        await asyncio.sleep(DELAY * random.uniform(0.8, 1.2))
        prices = {sku: round(5 + (hash(sku) % 9000) / 100, 2) for sku in req["skus"]}
        writer.write((json.dumps({"prices": prices}) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with server:
        await server.serve_forever()


asyncio.run(main())
