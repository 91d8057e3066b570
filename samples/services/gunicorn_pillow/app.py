"""Product-photo tagging: a WSGI app under gunicorn (pre-fork, 2 sync workers).

Each upload is opened with Pillow, converted, resized to the model's 224x224 input with a
high-quality filter, scaled and standardised in NumPy, then scored by a small NumPy model.
Decoding and resizing the full-size JPEG is most of the CPU. IMAGE_DRAFT=1 lets the JPEG
decoder scale down while decoding (Image.draft) and resizes with a cheaper filter.
"""

import io
import json

import numpy as np
from PIL import Image
from zoolib import setting

DRAFT = setting("IMAGE_DRAFT", "0") == "1"
MEAN = np.array([0.485, 0.456, 0.406], dtype=np.float32)
STD = np.array([0.229, 0.224, 0.225], dtype=np.float32)
rng = np.random.default_rng(0)
W1 = (rng.standard_normal((3 * 56 * 56, 128)) / 300).astype(np.float32)


def load_item(data: bytes) -> np.ndarray:
    img = Image.open(io.BytesIO(data))
    if DRAFT:
        img.draft("RGB", (224, 224))
    img = img.convert("RGB")
    img = img.resize((224, 224), Image.BILINEAR if DRAFT else Image.LANCZOS)
    x = np.asarray(img, dtype=np.float32) / 255.0
    return (x - MEAN) / STD


def prepare(x: np.ndarray) -> np.ndarray:
    return x[::4, ::4].reshape(1, -1)


def app(environ, start_response):  # type: ignore[no-untyped-def]
    if environ["PATH_INFO"] == "/health":
        out = b'{"ok": true}'
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        x = prepare(load_item(environ["wsgi.input"].read(n)))
        out = json.dumps({"tag": int(np.argmax(np.maximum(x @ W1, 0)))}).encode()
    start_response(
        "200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(out)))]
    )
    return [out]
