"""Local feature store: answers 'GET <user>' lines with a JSON feature vector."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
LIFETIME = float(sys.argv[2])
DELAY = float(os.environ.get("SVC_STORE_DELAY_MS", "20")) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        user = int(line.split()[1])
        await asyncio.sleep(DELAY)
        rng = random.Random(user)
        vec = [round(rng.uniform(-1, 1), 4) for _ in range(32)]
        writer.write(json.dumps({"user": user, "f": vec}).encode() + b"\n")
        await writer.drain()
    writer.close()


async def main():
    server = await asyncio.start_server(handle, "127.0.0.1", PORT)
    asyncio.get_running_loop().call_later(LIFETIME, lambda: os._exit(0))
    async with server:
        await server.serve_forever()


asyncio.run(main())
