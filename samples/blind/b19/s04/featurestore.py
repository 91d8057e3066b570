"""Small local feature store: line protocol over TCP, answers GET <user_id> with a JSON feature vector."""
import asyncio
import json
import os
import random
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("STORE_DELAY_MS", "60")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60")) + 5

rnd = random.Random(3)
TABLE = {i: [round(rnd.uniform(-1, 1), 4) for _ in range(32)] for i in range(5000)}


async def handle(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            key = int(line.split()[1])
            await asyncio.sleep(DELAY)
            writer.write((json.dumps(TABLE.get(key % 5000)) + "\n").encode())
            await writer.drain()
    except (ConnectionError, ValueError, IndexError):
        pass
    finally:
        writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME)


asyncio.run(main())
