"""Next-best-offer service speaking JSON lines over TCP."""
import asyncio
import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("SVC_PORT", "18215"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18265"))
CONNECTIONS = int(os.environ.get("SVC_STORE_CONNECTIONS", "1"))


class StoreClient:
    def __init__(self, n):
        self.n = n
        self.free = None

    async def start(self):
        self.free = asyncio.Queue()
        for _ in range(self.n):
            for _ in range(50):
                try:
                    conn = await asyncio.open_connection("127.0.0.1", STORE_PORT)
                    break
                except OSError:
                    await asyncio.sleep(0.1)
            self.free.put_nowait((asyncio.Lock(), conn))

    async def features(self, user):
        turn, (reader, writer) = await self.free.get()
        self.free.put_nowait((turn, (reader, writer)))
        async with turn:
            writer.write((json.dumps({"user": user}) + "\n").encode())
            await writer.drain()
            return json.loads(await reader.readline())["f"]


class Ranker:
    def __init__(self):
        rng = np.random.default_rng(9)
        self.offers = rng.standard_normal((300, 16)).astype(np.float32)

    def handle(self, feats, k=5):
        s = self.offers @ np.asarray(feats, dtype=np.float32)
        return np.argsort(-s)[:k].tolist()


async def main():
    subprocess.Popen([sys.executable, os.path.join(HERE, "featstore.py"), str(STORE_PORT),
                      os.environ.get("SVC_STORE_DELAY_MS", "6")])
    store = StoreClient(CONNECTIONS)
    await store.start()
    ranker = Ranker()

    async def serve(reader, writer):
        while True:
            line = await reader.readline()
            if not line:
                break
            req = json.loads(line)
            feats = await store.features(req["user"])
            writer.write((json.dumps({"offers": ranker.handle(feats)}) + "\n").encode())
            await writer.drain()
        writer.close()

    srv = await asyncio.start_server(serve, "127.0.0.1", PORT)
    async with srv:
        await srv.serve_forever()


if __name__ == "__main__":
    asyncio.run(main())
