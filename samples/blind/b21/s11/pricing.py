"""Local pricing service: answers 'QUOTE <sku>' lines with a JSON price record."""
import asyncio
import json
import os
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_PRICING_DELAY_MS", "80")) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        sku = int(line.split()[1])
        await asyncio.sleep(DELAY)
        writer.write((json.dumps({"sku": sku, "base": 10 + sku % 97, "discount": (sku % 7) / 20}) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with server:
        await server.serve_forever()


asyncio.run(main())
