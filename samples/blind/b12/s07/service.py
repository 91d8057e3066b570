"""Churn prediction API: fetches the user's profile from the profile service, scores it with an ONNX model."""
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import http.client

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper

PORT = int(os.environ.get("SVC_PORT", "18807"))
PROFILE_PORT = int(os.environ.get("SVC_PROFILE_PORT", "18857"))
PROFILE_DELAY_MS = float(os.environ.get("SVC_PROFILE_DELAY_MS", "40"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
HERE = os.path.dirname(os.path.abspath(__file__))


def build_model():
    rng = np.random.default_rng(0)
    w1 = helper.make_tensor("w1", TensorProto.FLOAT, [16, 32], rng.normal(size=(16, 32)).astype(np.float32).ravel())
    w2 = helper.make_tensor("w2", TensorProto.FLOAT, [32, 1], rng.normal(size=(32, 1)).astype(np.float32).ravel())
    g = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
         helper.make_node("MatMul", ["r", "w2"], ["z"]), helper.make_node("Sigmoid", ["z"], ["y"])],
        "churn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 16])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 1])], [w1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


_sess = None
_conn = None


def fetch_profile(uid):
    global _conn
    for _ in range(2):
        try:
            if _conn is None:
                _conn = http.client.HTTPConnection("127.0.0.1", PROFILE_PORT, timeout=5)
            _conn.request("GET", f"/profile/{uid}")
            return json.loads(_conn.getresponse().read())["f"]
        except (http.client.HTTPException, OSError):
            _conn = None
    raise RuntimeError("profile service unavailable")


def app(environ, start_response):
    global _sess
    if _sess is None:
        _sess = build_model()
    uid = environ.get("PATH_INFO", "/").rsplit("/", 1)[-1]
    x = np.asarray([fetch_profile(uid)], dtype=np.float32)
    p = float(_sess.run(None, {"x": x})[0][0, 0])
    payload = json.dumps({"user": uid, "churn": p}).encode()
    start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(payload)))])
    return [payload]


if __name__ == "__main__":
    from gunicorn.app.base import BaseApplication

    helper_proc = subprocess.Popen([sys.executable, os.path.join(HERE, "profile_service.py"), str(PROFILE_PORT),
                                    str(PROFILE_DELAY_MS), str(LIFETIME + 10)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", PROFILE_PORT)).close()
            break
        except OSError:
            time.sleep(0.1)

    class Server(BaseApplication):
        def load_config(self):
            self.cfg.set("bind", f"127.0.0.1:{PORT}")
            self.cfg.set("workers", 2)
            self.cfg.set("worker_class", "sync")
            self.cfg.set("loglevel", "warning")
            self.cfg.set("graceful_timeout", 2)

        def load(self):
            return app

    def _stop_later():
        time.sleep(LIFETIME)
        helper_proc.terminate()
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)
        os._exit(0)

    threading.Thread(target=_stop_later, daemon=True).start()
    try:
        Server().run()
    finally:
        helper_proc.terminate()
