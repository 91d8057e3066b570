"""Feature store stand-in: `GET <key>` -> JSON features after the store's lookup time."""
import asyncio
import json
import os
import zlib

DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "50")) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = line.split()[-1]
        h = zlib.crc32(key)
        await asyncio.sleep(DELAY)
        feats = [((h >> (i % 24)) & 255) / 255.0 for i in range(32)]
        writer.write((json.dumps({"k": key.decode(), "f": feats}) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", int(os.environ["STORE_PORT"]))
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
