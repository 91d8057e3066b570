"""Product-photo classifier: FastAPI (async def). JPEG decode/resize on an executor, small CNN on onnxruntime.

Env:
  SVC_PORT            listen port (default 18310)
  SVC_DECODE_WORKERS  image decode executor threads (default 1)
  SVC_INFER_WORKERS   inference executor threads (default 4)
"""
import asyncio
import io
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import onnxruntime as ort
import uvicorn
from fastapi import FastAPI, Request
from PIL import Image

PORT = int(os.environ.get("SVC_PORT", "18310"))
DECODE_WORKERS = int(os.environ.get("SVC_DECODE_WORKERS", "1"))
INFER_WORKERS = int(os.environ.get("SVC_INFER_WORKERS", "4"))
HERE = os.path.dirname(os.path.abspath(__file__))
SIZE = 112
MEAN = np.array([0.485, 0.456, 0.406], np.float32) * 255
STD = np.array([0.229, 0.224, 0.225], np.float32) * 255
LABELS = ["shoe", "bag", "shirt", "watch", "lamp", "chair", "phone", "mug"]


def export(path):
    import torch

    torch.manual_seed(0)
    net = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, 2, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, 2, 1), torch.nn.ReLU(),
        torch.nn.Conv2d(32, 64, 3, 2, 1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(64, len(LABELS)),
    ).eval()
    torch.onnx.export(net, (torch.randn(1, 3, SIZE, SIZE),), path + ".tmp", dynamo=False,
                      input_names=["image"], output_names=["logits"])
    os.replace(path + ".tmp", path)


model_path = os.path.join(HERE, "photo_cnn.onnx")
if not os.path.exists(model_path):
    export(model_path)
so = ort.SessionOptions()
so.intra_op_num_threads = 1
so.inter_op_num_threads = 1
sess = ort.InferenceSession(model_path, so, providers=["CPUExecutionProvider"])

decode_pool = ThreadPoolExecutor(DECODE_WORKERS, thread_name_prefix="decode")
infer_pool = ThreadPoolExecutor(INFER_WORKERS, thread_name_prefix="infer")


def load_image(data):
    im = Image.open(io.BytesIO(data))
    im = im.convert("RGB")
    w, h = im.size
    s = min(w, h)
    im = im.crop(((w - s) // 2, (h - s) // 2, (w + s) // 2, (h + s) // 2)).resize((SIZE, SIZE), Image.LANCZOS)
    x = (np.asarray(im, dtype=np.float32) - MEAN) / STD
    return x.transpose(2, 0, 1)[None].copy()


def classify(x):
    logits = sess.run(None, {"image": x})[0][0]
    p = np.exp(logits - logits.max())
    p /= p.sum()
    k = int(p.argmax())
    return LABELS[k], float(p[k])


app = FastAPI()


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/classify")
async def predict(request: Request):
    data = await request.body()
    loop = asyncio.get_running_loop()
    x = await loop.run_in_executor(decode_pool, load_image, data)
    label, p = await loop.run_in_executor(infer_pool, classify, x)
    return {"label": label, "p": round(p, 4)}


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
