"""Ticket triage consumer: reads JSON messages from stdin, tokenises them and routes each with an ONNX classifier."""
import json
import os
import sys
import threading
import time

import numpy as np
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers

LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/tmp/b16-s09-stats.txt")
READY = os.environ.get("SVC_READY_PATH", "/tmp/b16-s09-ready")
WORDS = ["refund", "order", "late", "broken", "account", "password", "charge", "card", "ship", "track",
         "cancel", "upgrade", "plan", "invoice", "login", "error", "app", "crash", "delivery", "address"]
QUEUES = ["billing", "shipping", "accounts", "technical"]


def build_tokenizer():
    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return tok


def build_router():
    rng = np.random.default_rng(1)
    emb = numpy_helper.from_array(rng.standard_normal((len(WORDS) + 1, 64)).astype(np.float32), "emb")
    w = numpy_helper.from_array(rng.standard_normal((64, len(QUEUES))).astype(np.float32), "w")
    axes = numpy_helper.from_array(np.array([1], dtype=np.int64), "axes")
    nodes = [helper.make_node("Gather", ["emb", "ids"], ["e"]),
             helper.make_node("ReduceMean", ["e", "axes"], ["m"], keepdims=0),
             helper.make_node("MatMul", ["m", "w"], ["logits"]),
             helper.make_node("Softmax", ["logits"], ["p"], axis=-1)]
    g = helper.make_graph(nodes, "router", [helper.make_tensor_value_info("ids", TensorProto.INT64, [1, None])],
                          [helper.make_tensor_value_info("p", TensorProto.FLOAT, [1, len(QUEUES)])],
                          initializer=[emb, w, axes])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 18)])
    m.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    return ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])


def main():
    tok = build_tokenizer()
    router = build_router()
    out = open(STATS, "a", buffering=1)
    threading.Timer(LIFETIME, lambda: os._exit(0)).start()
    open(READY, "w").close()
    for line in sys.stdin:
        msg = json.loads(line)
        ids = np.array([tok.encode(msg["text"]).ids], dtype=np.int64)
        p = router.run(None, {"ids": ids})[0][0]
        queue = QUEUES[int(p.argmax())]
        done = time.time()
        out.write(f"{done:.4f} {(done - msg['sent']) * 1000:.3f} ok {msg['id']} {queue}\n")


if __name__ == "__main__":
    main()
