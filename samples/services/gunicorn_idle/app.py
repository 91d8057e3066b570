"""Thumbnail service off-peak: a WSGI app under gunicorn (2 sync workers), little traffic.

Each request makes a 128x128 thumbnail of an uploaded JPEG with Pillow. Two clients, each
waiting 1-2 s between requests: the workers wait for work almost all the time.
"""

import io

from PIL import Image


def load_item(data: bytes) -> bytes:
    img = Image.open(io.BytesIO(data))
    img.thumbnail((128, 128))
    out = io.BytesIO()
    img.save(out, format="JPEG")
    return out.getvalue()


def app(environ, start_response):  # type: ignore[no-untyped-def]
    if environ["PATH_INFO"] == "/health":
        out = b'{"ok": true}'
        ctype = "application/json"
    else:
        n = int(environ.get("CONTENT_LENGTH") or 0)
        out = load_item(environ["wsgi.input"].read(n))
        ctype = "image/jpeg"
    start_response("200 OK", [("Content-Type", ctype), ("Content-Length", str(len(out)))])
    return [out]
