"""Text embedding service."""
import os
import random
import threading

import numpy as np
import onnxruntime as ort
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_PATH = os.path.join(HERE, "encoder.onnx")
MAX_LEN = 64
INTRA_OP = int(os.environ.get("SVC_INTRA_OP_THREADS", "4"))

_rng = random.Random(7)
_WORDS = ["".join(_rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(_rng.randint(2, 9))) for _ in range(3000)]


def build_tokenizer():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in _WORDS:
        vocab.setdefault(w, len(vocab))
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.enable_truncation(MAX_LEN - 2)
    return tok


def export_model():
    import torch
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=4096, hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=1024, max_position_embeddings=128)
    torch.manual_seed(0)
    bert = BertModel(cfg).eval()

    class Wrapped(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids):
            out = self.bert(input_ids=input_ids)
            return out.last_hidden_state, out.pooler_output

    m = Wrapped().eval()
    tmp = MODEL_PATH + f".{os.getpid()}.tmp"
    torch.onnx.export(m, (torch.ones(1, MAX_LEN, dtype=torch.long),), tmp, input_names=["input_ids"],
                      output_names=["hidden", "pooled"], dynamic_axes={"input_ids": {0: "b", 1: "n"}},
                      dynamo=False)
    os.replace(tmp, MODEL_PATH)


class Encoder:
    def __init__(self):
        marker = MODEL_PATH + ".export"
        import fcntl
        with open(marker, "w") as lf:
            fcntl.flock(lf, fcntl.LOCK_EX)
            if not os.path.exists(MODEL_PATH):
                export_model()
        so = ort.SessionOptions()
        so.intra_op_num_threads = INTRA_OP
        so.inter_op_num_threads = 1
        self.sess = ort.InferenceSession(MODEL_PATH, so, providers=["CPUExecutionProvider"])
        self.tok = build_tokenizer()

    def encode(self, texts):
        ids = np.zeros((len(texts), MAX_LEN), dtype=np.int64)
        for i, enc in enumerate(self.tok.encode_batch(texts)):
            row = [2] + enc.ids + [3]
            ids[i, :len(row)] = row
        pooled = self.sess.run(["pooled"], {"input_ids": ids})[0]
        return pooled


app = FastAPI()
encoder = Encoder()


class Batch(BaseModel):
    texts: list[str]


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/embed")
def predict(batch: Batch):
    vecs = encoder.encode(batch.texts)
    return {"n": len(vecs), "norms": np.linalg.norm(vecs, axis=1).round(3).tolist()}
