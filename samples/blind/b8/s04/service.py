import asyncio, json, os, socket, subprocess, sys, threading, time
from contextlib import asynccontextmanager
from fastapi import FastAPI
from pydantic import BaseModel
import uvicorn

PORT = int(os.environ.get("SVC_PORT", "18641"))
BACKEND_PORT = int(os.environ.get("SVC_BACKEND_PORT", "18642"))
env = dict(os.environ, BACKEND_DELAY_MS=os.environ.get("SVC_BACKEND_DELAY_MS", "50"))
backend = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "backend.py"),
                            str(BACKEND_PORT)], env=env)
for _ in range(100):
    try:
        socket.create_connection(("127.0.0.1", BACKEND_PORT), 0.2).close(); break
    except OSError:
        time.sleep(0.1)


class Conn:
    def __init__(self):
        self.free = asyncio.Queue()

    async def call(self, payload):
        try:
            r, w = self.free.get_nowait()
        except asyncio.QueueEmpty:
            r, w = await asyncio.open_connection("127.0.0.1", BACKEND_PORT)
        w.write((json.dumps(payload) + "\n").encode())
        await w.drain()
        out = json.loads(await r.readline())
        self.free.put_nowait((r, w))
        return out


conns = None


@asynccontextmanager
async def lifespan(app):
    global conns
    conns = Conn()
    yield


app = FastAPI(lifespan=lifespan)


class Req(BaseModel):
    user: str
    candidates: list[int]


@app.post("/recommend")
async def recommend(req: Req):
    cands = [c for c in req.candidates if c >= 0][:50]
    res = await conns.call({"user": req.user, "candidates": cands})
    return {"user": req.user, "top": [i for i, _ in res["ranked"][:10]]}


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    backend.kill(); os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
