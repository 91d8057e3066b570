"""Photo tagging API (Flask): upload a JPEG, get the top tags."""
import io
import os
import threading
import time

import numpy as np
from flask import Flask, jsonify, request
from PIL import Image
from werkzeug.serving import make_server

PORT = int(os.environ.get("SVC_PORT", "18802"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
FAST_DECODE = os.environ.get("SVC_DRAFT", "0") == "1"
SIZE = 224

rng = np.random.default_rng(0)
W1 = rng.standard_normal((28 * 28 * 3, 256)).astype(np.float32) * 0.02
W2 = rng.standard_normal((256, 50)).astype(np.float32) * 0.05
TAGS = [f"tag{i}" for i in range(50)]

app = Flask(__name__)


def load_image(data):
    img = Image.open(io.BytesIO(data))
    if FAST_DECODE:
        img.draft("RGB", (SIZE * 2, SIZE * 2))
        img = img.convert("RGB").resize((SIZE, SIZE), Image.BILINEAR)
    else:
        img = img.convert("RGB").resize((SIZE, SIZE), Image.LANCZOS)
    return np.asarray(img, dtype=np.float32) / 255.0


def infer(x):
    x = x.reshape(28, 8, 28, 8, 3).mean(axis=(1, 3)).reshape(1, -1)
    h = np.maximum(x @ W1, 0)
    s = h @ W2
    top = np.argsort(-s[0])[:5]
    return [(TAGS[i], float(s[0, i])) for i in top]


@app.post("/tag")
def tag():
    x = load_image(request.get_data())
    return jsonify({"tags": infer(x)})


def main():
    srv = make_server("127.0.0.1", PORT, app, threaded=True)
    threading.Timer(LIFETIME, srv.shutdown).start()
    srv.serve_forever()


if __name__ == "__main__":
    main()
