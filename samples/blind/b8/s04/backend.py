import asyncio, json, os, random, sys

DELAY = float(os.environ.get("BACKEND_DELAY_MS", "50")) / 1000.0


async def handle(reader, writer):
    try:
        while True:
            line = await reader.readline()
            if not line:
                break
            req = json.loads(line)
            await asyncio.sleep(DELAY)
            items = [[i, round(random.random(), 4)] for i in req["candidates"]]
            writer.write((json.dumps({"ranked": sorted(items, key=lambda t: -t[1])}) + "\n").encode())
            await writer.drain()
    finally:
        writer.close()


async def main(port):
    srv = await asyncio.start_server(handle, "127.0.0.1", port)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1])))
