"""Local profile store: answers `GET <user>` with a JSON profile row (asyncio TCP, line protocol)."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
LIFETIME = float(sys.argv[2])
DELAY_MS = float(os.environ.get("SVC_STORE_DELAY_MS", "40"))


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        user = line.split()[-1].decode()
        await asyncio.sleep(DELAY_MS / 1000.0)
        rnd = random.Random(user)
        row = {"user": user, "age_days": rnd.randint(1, 3000), "clicks": [rnd.random() for _ in range(16)]}
        writer.write(json.dumps(row).encode() + b"\n")
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME)


if __name__ == "__main__":
    asyncio.run(main())
