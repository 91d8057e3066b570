"""Model construction."""
import os

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build(path, dims=(512, 2048, 2048, 512, 16), seed=0):
    if os.path.exists(path):
        return path
    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    cur = "x"
    for i, (a, b) in enumerate(zip(dims[:-1], dims[1:])):
        w = (rng.standard_normal((a, b)) / np.sqrt(a)).astype(np.float32)
        bias = np.zeros(b, np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(bias, f"b{i}")]
        nodes.append(helper.make_node("MatMul", [cur, f"w{i}"], [f"m{i}"]))
        nxt = f"h{i}" if i < len(dims) - 2 else "logits"
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}" if i < len(dims) - 2 else nxt]))
        if i < len(dims) - 2:
            nodes.append(helper.make_node("Relu", [f"a{i}"], [nxt]))
        cur = nxt
    graph = helper.make_graph(
        nodes, "scorer",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", dims[0]])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["n", dims[-1]])],
        inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    tmp = path + f".{os.getpid()}.tmp"
    onnx.save(m, tmp)
    os.replace(tmp, path)
    return path
