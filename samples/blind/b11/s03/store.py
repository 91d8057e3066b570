"""Local feature store: answers 'GET <key>' lines with a feature vector line."""
import asyncio
import os
import sys

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("STORE_DELAY_MS", "1.0")) / 1000.0
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))


async def serve(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            key = int(line.split()[1])
            await asyncio.sleep(DELAY)
            vals = " ".join(f"{((key * 31 + i) % 97) / 97:.4f}" for i in range(32))
            writer.write((vals + "\n").encode())
            await writer.drain()
    except (ConnectionError, ValueError, IndexError):
        pass
    finally:
        writer.close()


async def main():
    srv = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with srv:
        await asyncio.sleep(LIFETIME)


asyncio.run(main())
