"""Local vector cache: answers 'GET <key>' lines with a 32-value embedding line."""
import asyncio
import os
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("SVC_CACHE_DELAY_MS", "6")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        h = hash(line.split()[-1])
        await asyncio.sleep(DELAY)
        writer.write((" ".join(str(((h >> (i * 2)) & 255) / 255.0) for i in range(32)) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME + 5)


if __name__ == "__main__":
    asyncio.run(main())
