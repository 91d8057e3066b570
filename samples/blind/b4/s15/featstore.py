"""Feature store process: JSON-lines over TCP, answers in request order."""
import asyncio
import json
import sys

DELAY = float(sys.argv[2]) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = json.loads(line)["user"]
        await asyncio.sleep(DELAY)
        h = hash(key)
        writer.write((json.dumps({"f": [((h >> i) & 255) / 255.0 for i in range(16)]}) + "\n").encode())
        await writer.drain()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(sys.argv[1]))
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
