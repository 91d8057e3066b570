"""Embedding server stand-in (asyncio, line protocol). Each request takes EMB_DELAY_MS (remote GPU box)."""
import asyncio
import json
import os
import zlib

import numpy as np

PORT = int(os.environ.get("EMB_PORT", "18454"))
DELAY = float(os.environ.get("EMB_DELAY_MS", "50")) / 1000.0


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        seed = zlib.crc32(line)
        await asyncio.sleep(DELAY)
        v = np.random.default_rng(seed).standard_normal(64).round(4).tolist()
        writer.write((json.dumps(v) + "\n").encode())
        await writer.drain()
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
