"""Chat-message moderation consumer: reads messages on stdin, tokenises them and scores them with an ONNX model."""
import json
import os
import sys
import threading
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/s12-records.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/s12-ready")
VOCAB, DIM, SEQ = 3000, 64, 48

vocab = {"[UNK]": 0}
for i in range(1, VOCAB):
    vocab[f"t{i}"] = i
tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = Whitespace()
tokenizer.enable_truncation(SEQ)
tokenizer.enable_padding(length=SEQ)


def build_session():
    rng = np.random.default_rng(0)
    emb = numpy_helper.from_array((rng.standard_normal((VOCAB, DIM)) * 0.1).astype(np.float32), "emb")
    w1 = numpy_helper.from_array((rng.standard_normal((DIM, 128)) * 0.1).astype(np.float32), "w1")
    w2 = numpy_helper.from_array((rng.standard_normal((128, 4)) * 0.1).astype(np.float32), "w2")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"]),
             helper.make_node("ReduceMean", ["e", "axes"], ["m"], keepdims=0),
             helper.make_node("MatMul", ["m", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
             helper.make_node("MatMul", ["r", "w2"], ["y"])]
    graph = helper.make_graph(nodes, "moderation",
                              [helper.make_tensor_value_info("ids", TensorProto.INT64, [None, SEQ])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 4])],
                              [emb, w1, w2, axes])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    return ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])


session = build_session()


def score(text):
    ids = np.asarray([tokenizer.encode(text).ids], dtype=np.int64)
    return int(session.run(None, {"ids": ids})[0].argmax())


def main():
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    score("t1 t2")
    f = open(STATS, "a", buffering=1 << 16)
    last = time.time()
    open(READY, "w").close()
    for line in sys.stdin:
        t0 = time.time()
        msg = json.loads(line)
        score(msg["text"])
        t1 = time.time()
        f.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
        if t1 - last > 0.3:
            f.flush()
            last = t1
    f.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
