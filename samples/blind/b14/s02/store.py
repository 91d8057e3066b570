"""Local feature store: answers `GET <user_id>` lines with a packed float32 feature vector."""
import asyncio
import os
import sys

import numpy as np

PORT = int(sys.argv[1])
DELAY = float(os.environ.get("STORE_DELAY_MS", "6")) / 1000.0
rng = np.random.default_rng(3)
TABLE = rng.standard_normal((10000, 64)).astype(np.float32)


async def serve(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            uid = int(line.split()[1]) % len(TABLE)
            await asyncio.sleep(DELAY)
            writer.write(TABLE[uid].tobytes())
            await writer.drain()
    except (ConnectionError, ValueError, IndexError):
        pass
    finally:
        writer.close()


async def main():
    server = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with server:
        await server.serve_forever()


asyncio.run(main())
