"""Small models the samples run, built in memory (no files, nothing downloaded).

``mlp_session`` builds an ONNX multi-layer perceptron (MatMul + Add + Relu per layer) with
the ``onnx`` package and loads it into an onnxruntime ``InferenceSession``: a real runtime
with a real intra-op thread pool, which is what the scheduling sample needs. Weights are
seeded random numbers, so every run computes the same thing.
"""

from __future__ import annotations

import sys


def _require(module):
    try:
        return __import__(module)
    except ImportError:
        sys.stderr.write(f"this sample needs {module} (pip install -e '.[samples]' or '.[test]')\n")
        raise SystemExit(2) from None


def mlp_model_bytes(width=512, layers=4, seed=0):
    """A serialised ONNX model: x[N, width] -> relu(x @ W_i + b_i) for each layer."""
    _require("onnx")
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []
    prev = "x"
    for i in range(layers):
        w = (rng.standard_normal((width, width)) / np.sqrt(width)).astype(np.float32)
        b = np.zeros(width, dtype=np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}"), numpy_helper.from_array(b, f"b{i}")]
        nodes += [
            helper.make_node("MatMul", [prev, f"w{i}"], [f"mm{i}"]),
            helper.make_node("Add", [f"mm{i}", f"b{i}"], [f"add{i}"]),
            helper.make_node("Relu", [f"add{i}"], [f"h{i}"]),
        ]
        prev = f"h{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"]))
    graph = helper.make_graph(
        nodes,
        "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", width])],
        inits,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # readable by every onnxruntime of the last years
    return model.SerializeToString()


def mlp_session(intra_op_threads, inter_op_threads=1, width=512, layers=4):
    """An onnxruntime session of the MLP with the given thread-pool sizes."""
    ort = _require("onnxruntime")
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = intra_op_threads
    opts.inter_op_num_threads = inter_op_threads
    opts.log_severity_level = 3
    return ort.InferenceSession(
        mlp_model_bytes(width, layers), opts, providers=["CPUExecutionProvider"]
    )
