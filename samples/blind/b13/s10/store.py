"""Local feature store: answers 'GET <key>' lines with a feature vector line."""
import asyncio
import os
import sys
import time

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "40")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = line.split()[-1]
        h = hash(key)
        vec = " ".join(str(((h >> (i * 3)) & 255) / 255.0) for i in range(16))
        await asyncio.sleep(DELAY)
        writer.write((vec + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME + 5)


if __name__ == "__main__":
    asyncio.run(main())
