"""Audio clip loudness/event API: FastAPI async handlers hand the signal work to an executor."""
import asyncio
import concurrent.futures as cf
import os
import threading
import time

import numpy as np
from fastapi import FastAPI
from pydantic import BaseModel
import uvicorn

PORT = int(os.environ.get("SVC_PORT", "18808"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REUSE = os.environ.get("SVC_REUSE_BUFFERS", "0") == "1"
SAMPLES = 10_000_000
FRAME = 1000

rng = np.random.default_rng(5)
CLIPS = [rng.integers(-20000, 20000, SAMPLES, dtype=np.int16) for _ in range(4)]
HEAD = rng.standard_normal((SAMPLES // FRAME, 8)).astype(np.float32) / 100
pool = cf.ThreadPoolExecutor(2, thread_name_prefix="dsp")
tls = threading.local()
app = FastAPI()


def _buffers():
    b = getattr(tls, "bufs", None)
    if b is None:
        b = tls.bufs = (np.empty(SAMPLES, np.float32), np.empty(SAMPLES, np.float32))
    return b


def analyse(clip_id, gain):
    raw = CLIPS[clip_id % len(CLIPS)]
    if REUSE:
        x, y = _buffers()
        np.multiply(raw, np.float32(gain / 32768.0), out=x)
        np.abs(x, out=y)
    else:
        x = raw.astype(np.float32) * np.float32(gain / 32768.0)
        y = np.abs(x)
    energy = np.add.reduceat(y, np.arange(0, SAMPLES, FRAME))
    logits = energy @ HEAD
    return int(np.argmax(logits)), float(energy.max())


class Req(BaseModel):
    clip: int
    gain: float = 1.0


@app.post("/analyse")
async def handle(req: Req):
    loop = asyncio.get_running_loop()
    cls, peak = await loop.run_in_executor(pool, analyse, req.clip, req.gain)
    return {"class": cls, "peak": peak}


def _stop():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
