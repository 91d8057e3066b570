"""Review sentiment workers: pull text batches from the local broker, tokenise, run an ONNX classifier."""
import json
import multiprocessing as mp
import os
import socket
import subprocess
import sys
import time

import numpy as np

from textproc import BasicWordPiece, build_vocab

BROKER_PORT = 18862
SEQ = 192
N_WORKERS = 2
TOKENIZER = os.environ.get("SVC_TOKENIZER", "python")
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
STATS = os.environ.get("SVC_STATS_PATH", "/dev/null")
READY = os.environ.get("SVC_READY_PATH")
HERE = os.path.dirname(os.path.abspath(__file__))


def build_model(vocab_size, dim=128, hidden=768, classes=3):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(0)
    inits = [
        numpy_helper.from_array((rng.standard_normal((vocab_size, dim)) * 0.1).astype(np.float32), "emb"),
        numpy_helper.from_array((rng.standard_normal((dim, hidden)) * 0.1).astype(np.float32), "w_tok"),
        numpy_helper.from_array(np.zeros(hidden, np.float32), "b_tok"),
        numpy_helper.from_array((rng.standard_normal((hidden, 256)) * 0.1).astype(np.float32), "w1"),
        numpy_helper.from_array(np.zeros(256, np.float32), "b1"),
        numpy_helper.from_array((rng.standard_normal((256, classes)) * 0.1).astype(np.float32), "w2"),
        numpy_helper.from_array(np.zeros(classes, np.float32), "b2"),
    ]
    nodes = [
        helper.make_node("Gather", ["emb", "input_ids"], ["tok"]),
        helper.make_node("MatMul", ["tok", "w_tok"], ["tok_h"]),
        helper.make_node("Add", ["tok_h", "b_tok"], ["tok_hb"]),
        helper.make_node("Relu", ["tok_hb"], ["tok_r"]),
        helper.make_node("ReduceMean", ["tok_r"], ["pooled"], axes=[1], keepdims=0),
        helper.make_node("Gemm", ["pooled", "w1", "b1"], ["h"]),
        helper.make_node("Tanh", ["h"], ["ht"]),
        helper.make_node("Gemm", ["ht", "w2", "b2"], ["logits"]),
    ]
    graph = helper.make_graph(nodes, "sentiment",
                              [helper.make_tensor_value_info("input_ids", TensorProto.INT64, [None, SEQ])],
                              [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [None, classes])], inits)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    m.ir_version = 8
    return m.SerializeToString()


def make_encoder(vocab):
    if TOKENIZER == "rust":
        from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
        tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
        tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True)
        tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()

        def encode(texts):
            out = np.zeros((len(texts), SEQ), dtype=np.int64)
            heads = [t[:SEQ * 8] for t in texts]
            for i, e in enumerate(tok.encode_batch(heads, add_special_tokens=False)):
                ids = [vocab["[CLS]"]] + e.ids[:SEQ - 2] + [vocab["[SEP]"]]
                out[i, :len(ids)] = ids
            return out
        return encode
    wp = BasicWordPiece(vocab)
    return lambda texts: np.array([wp.encode(t, SEQ) for t in texts], dtype=np.int64)


def worker(wid, deadline, ready):
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
    import onnxruntime as ort
    vocab = build_vocab()
    encode = make_encoder(vocab)
    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    sess = ort.InferenceSession(build_model(len(vocab)), opts, providers=["CPUExecutionProvider"])
    conn = socket.create_connection(("127.0.0.1", BROKER_PORT))
    rf = conn.makefile("rb")
    out = open(STATS, "a", buffering=1 << 14)
    ready.set()
    last = time.time()
    while time.time() < deadline:
        t0 = time.time()
        conn.sendall(b"NEXT\n")
        job = json.loads(rf.readline())
        ids = encode(job["texts"])
        logits = sess.run(None, {"input_ids": ids})[0]
        logits.argmax(1)
        now = time.time()
        out.write(f"{now:.4f} {(now - t0) * 1000:.3f} ok\n")
        if now - last > 0.3:
            out.flush()
            last = now
    out.close()


def wait_broker():
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", BROKER_PORT)).close()
            return
        except OSError:
            time.sleep(0.1)


if __name__ == "__main__":
    deadline = time.time() + LIFETIME
    broker = subprocess.Popen([sys.executable, os.path.join(HERE, "broker.py"), str(BROKER_PORT)])
    wait_broker()
    ctx = mp.get_context("fork")
    events = [ctx.Event() for _ in range(N_WORKERS)]
    procs = [ctx.Process(target=worker, args=(i, deadline, events[i])) for i in range(N_WORKERS)]
    for p in procs:
        p.start()
    for e in events:
        e.wait()
    if READY:
        open(READY, "w").close()
    for p in procs:
        p.join()
    broker.terminate()
