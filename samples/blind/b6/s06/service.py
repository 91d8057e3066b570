"""Visual defect classifier: plain WSGI app under gunicorn sync workers, Pillow preprocessing, ONNX Runtime model."""
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

from gunicorn.app.base import BaseApplication

PORT = int(os.environ.get("SVC_PORT", "18406"))
STAGING = os.environ.get("SVC_STAGING", "fresh")
MAX_BATCH = 64
here = os.path.dirname(os.path.abspath(__file__))
MODEL_PATH = os.path.join(here, "defect_cnn.onnx")


def make_app():
    import numpy as np
    import onnxruntime as ort
    from PIL import Image

    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    sess = ort.InferenceSession(MODEL_PATH, so, providers=["CPUExecutionProvider"])
    mean = np.array([0.485, 0.456, 0.406], np.float32) * 255
    std = np.array([0.229, 0.224, 0.225], np.float32) * 255
    stage = np.zeros((MAX_BATCH, 224, 224, 3), np.float32)
    nchw = np.zeros((MAX_BATCH, 3, 224, 224), np.float32)

    def collate(imgs):
        n = len(imgs)
        if STAGING == "fresh":
            batch = np.zeros((MAX_BATCH, 224, 224, 3), np.float32)
            for i, im in enumerate(imgs):
                batch[i] = im
            batch = (batch - mean) / std
            return np.ascontiguousarray(batch.transpose(0, 3, 1, 2))[:n]
        for i, im in enumerate(imgs):
            stage[i] = im
        np.subtract(stage, mean, out=stage)
        np.divide(stage, std, out=stage)
        nchw[...] = stage.transpose(0, 3, 1, 2)
        return nchw[:n]

    def app(environ, start_response):
        size = int(environ.get("CONTENT_LENGTH") or 0)
        raw = environ["wsgi.input"].read(size)
        img = Image.open(io.BytesIO(raw)).convert("RGB").resize((224, 224), Image.BILINEAR)
        x = collate([np.asarray(img)])
        y = sess.run(None, {"x": x})[0][0]
        body = json.dumps({"label": int(y.argmax()), "logits": [round(float(v), 4) for v in y]}).encode()
        start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
        return [body]

    return app


class App(BaseApplication):
    def load_config(self):
        self.cfg.set("bind", f"127.0.0.1:{PORT}")
        self.cfg.set("workers", 2)
        self.cfg.set("worker_class", "sync")
        self.cfg.set("timeout", 120)
        self.cfg.set("loglevel", "warning")

    def load(self):
        return make_app()


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    if os.getpgid(0) == os.getpid():
        os.killpg(os.getpid(), signal.SIGKILL)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_lifetime, daemon=True).start()
    if not os.path.exists(MODEL_PATH):
        subprocess.run([sys.executable, os.path.join(here, "export_model.py"), MODEL_PATH], check=True)
    App().run()
