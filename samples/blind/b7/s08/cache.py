"""Local feature cache (memcached stand-in): 'GET key\n' -> JSON list of floats; in-memory dict."""
import asyncio
import json
import random
import sys

PORT = int(sys.argv[1])
rng = random.Random(5)
VALUES = {i: json.dumps([round(rng.gauss(0, 1), 3) for _ in range(4)]).encode() + b"\n" for i in range(4096)}


async def handle(reader, writer):
    while True:
        line = await reader.readline()
        if not line:
            break
        key = int(line.split()[1]) % 4096
        writer.write(VALUES[key])
    writer.close()


async def main():
    srv = await asyncio.start_server(handle, "127.0.0.1", PORT)
    print("cache ready", flush=True)
    async with srv:
        await srv.serve_forever()


asyncio.run(main())
