import json, os, sys, threading, time
import onnx
from onnx import TensorProto, helper, numpy_helper
import numpy as np
import onnxruntime as ort


def build_model():
    rng = np.random.default_rng(5)
    w1 = numpy_helper.from_array(rng.standard_normal((24, 64)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(np.zeros(64, np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((64, 2)).astype(np.float32), "w2")
    nodes = [helper.make_node("MatMul", ["x", "w1"], ["h0"]), helper.make_node("Add", ["h0", "b1"], ["h1"]),
             helper.make_node("Relu", ["h1"], ["h2"]), helper.make_node("MatMul", ["h2", "w2"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["p"], axis=1)]
    g = helper.make_graph(nodes, "anomaly", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 24])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [None, 2])], [w1, b1, w2])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


opts = ort.SessionOptions()
opts.intra_op_num_threads = 1
sess = ort.InferenceSession(build_model(), opts, providers=["CPUExecutionProvider"])
stats = open(os.environ.get("SVC_STATS_PATH", os.devnull), "a", buffering=1)
window = []


def _expire():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "600")))
    os._exit(0)


threading.Thread(target=_expire, daemon=True).start()
open(os.environ.get("SVC_READY_PATH", os.devnull), "w").close()
for line in sys.stdin:
    msg = json.loads(line)
    x = np.asarray(msg["sensor"], dtype=np.float32)[None, :]
    window.append(x)
    del window[:-32]
    z = (x - np.mean(window, axis=0)) / (np.std(window, axis=0) + 1e-3)
    p = sess.run(None, {"x": z})[0][0]
    now = time.time()
    stats.write(f"{now:.4f} {(now - msg['ts']) * 1000:.3f} ok\n")
