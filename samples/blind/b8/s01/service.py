import os, re, threading, time, unicodedata, zlib
import numpy as np
import torch
from fastapi import FastAPI
from pydantic import BaseModel
import uvicorn

torch.set_num_threads(1)
DIM = 4096
MODE = os.environ.get("SVC_FEATURES", "full")
PORT = int(os.environ.get("SVC_PORT", "18611"))


class Scorer(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(DIM, 256), torch.nn.ReLU(), torch.nn.Linear(256, 8))

    def forward(self, x):
        return torch.softmax(self.net(x), -1)


model = Scorer().eval()
_tok = re.compile(r"[a-z0-9']+")


def normalize(text):
    text = unicodedata.normalize("NFKD", text)
    return "".join(c for c in text.lower() if not unicodedata.combining(c))


def featurize(text):
    v = np.zeros(DIM, dtype=np.float32)
    t = normalize(text)
    words = _tok.findall(t)
    for w in words:
        v[zlib.crc32(w.encode()) % DIM] += 1.0
    if MODE == "full":
        padded = " " + " ".join(words) + " "
        for n in (3, 4, 5):
            for i in range(len(padded) - n + 1):
                g = padded[i:i + n]
                v[zlib.crc32(g.encode()) % DIM] += 0.5
    n = np.linalg.norm(v)
    return v / n if n else v


class Req(BaseModel):
    text: str


app = FastAPI()


@app.post("/predict")
def predict(req: Req):
    x = torch.from_numpy(featurize(req.text)).unsqueeze(0)
    with torch.inference_mode():
        p = model(x)[0]
    return {"label": int(p.argmax()), "score": float(p.max())}


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
