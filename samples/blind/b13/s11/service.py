"""Event scoring consumer: reads JSON events from stdin and scores them with an ONNX model."""
import json
import os
import sys
import threading
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s11-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s11-ready")


def build():
    rng = np.random.default_rng(2)
    inits = [
        helper.make_tensor("w1", TensorProto.FLOAT, [32, 64], rng.standard_normal(32 * 64).astype(np.float32).tolist()),
        helper.make_tensor("w2", TensorProto.FLOAT, [64, 1], rng.standard_normal(64).astype(np.float32).tolist()),
    ]
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["z"]), helper.make_node("Sigmoid", ["z"], ["y"])]
    g = helper.make_graph(nodes, "risk", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 32])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 1])], initializer=inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    sess = build()
    sess.run(None, {"x": np.zeros((1, 32), np.float32)})
    out = open(STATS, "a", buffering=1)
    open(READY, "w").close()
    for line in sys.stdin:
        ev = json.loads(line)
        x = np.asarray(ev["x"], dtype=np.float32)[None]
        y = float(sess.run(None, {"x": x})[0][0, 0])
        now = time.time()
        out.write(f"{now:.4f} {(now - ev['ts']) * 1000:.3f} ok\n")
        if y > 0.999:
            sys.stderr.write(f"alert user={ev['user']}\n")
    os._exit(0)


if __name__ == "__main__":
    main()
