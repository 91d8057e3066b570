"""Review classification worker: reads documents from stdin and classifies them."""
import json
import re
import unicodedata
import os
import random
import sys
import time

import numpy as np
import onnxruntime as ort

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL_PATH = os.path.join(HERE, "classifier.onnx")
MAX_TOKENS = 256
TOKENIZER = os.environ.get("SVC_TOKENIZER", "python")


def corpus():
    rng = random.Random(1)
    syl = ["ka", "lo", "mi", "ne", "ru", "ta", "sh", "ve", "po", "di", "qu", "ar", "en", "st", "ion", "ing"]
    words = ["".join(rng.choice(syl) for _ in range(rng.randint(2, 7))) for _ in range(5000)]
    for _ in range(3000):
        yield " ".join(rng.choice(words) for _ in range(30))


def train_bpe():
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFKD(), normalizers.StripAccents(), normalizers.Lowercase()])
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=2000, special_tokens=["[PAD]", "[UNK]"],
                                                          show_progress=False))
    return tok


class BPETokenizer:
    """Byte-pair encoder applying the learned merges in rank order."""

    def __init__(self, trained):
        spec = json.loads(trained.to_str())["model"]
        self.vocab = spec["vocab"]
        merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m) for m in spec["merges"]]
        self.ranks = {pair: i for i, pair in enumerate(merges)}
        self.word_re = re.compile(r"\w+|[^\w\s]+")

    def bpe(self, word):
        parts = list(word)
        while len(parts) > 1:
            best, best_rank = None, None
            for i in range(len(parts) - 1):
                r = self.ranks.get((parts[i], parts[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            parts[best:best + 2] = [parts[best] + parts[best + 1]]
        return parts

    def normalize(self, text):
        text = unicodedata.normalize("NFKD", text)
        return "".join(ch for ch in text if not unicodedata.combining(ch)).lower()

    def encode(self, text):
        ids = []
        for word in self.word_re.findall(self.normalize(text)):
            for p in self.bpe(word):
                ids.append(self.vocab.get(p, 1))
        return ids


class RustBPE:
    def __init__(self, trained):
        self.tok = trained

    def encode(self, text):
        return self.tok.encode(text).ids


VOCAB_SIZE = 2000


def export_model():
    import torch
    from torch import nn

    class Classifier(nn.Module):
        def __init__(self):
            super().__init__()
            self.emb = nn.Embedding(VOCAB_SIZE, 128)
            self.ff = nn.Sequential(nn.Linear(128, 384), nn.GELU(), nn.Linear(384, 128), nn.GELU())
            self.head = nn.Linear(128, 5)

        def forward(self, ids):
            h = self.ff(self.emb(ids))
            return self.head(h.mean(dim=1))

    torch.manual_seed(0)
    m = Classifier().eval()
    tmp = MODEL_PATH + f".{os.getpid()}.tmp"
    torch.onnx.export(m, (torch.zeros(1, MAX_TOKENS, dtype=torch.long),), tmp, input_names=["ids"],
                      output_names=["logits"], dynamic_axes={"ids": {1: "n"}}, dynamo=False)
    os.replace(tmp, MODEL_PATH)


def main():
    if not os.path.exists(MODEL_PATH):
        export_model()
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    sess = ort.InferenceSession(MODEL_PATH, so, providers=["CPUExecutionProvider"])
    trained = train_bpe()
    tok = BPETokenizer(trained) if TOKENIZER == "python" else RustBPE(trained)
    stats = open(os.environ["SVC_STATS_PATH"], "a") if os.environ.get("SVC_STATS_PATH") else None
    if os.environ.get("SVC_READY_PATH"):
        open(os.environ["SVC_READY_PATH"], "w").close()
    last = time.time()
    counts = np.zeros(5, dtype=np.int64)
    for line in sys.stdin:
        t0 = time.perf_counter()
        doc = json.loads(line)
        ids = tok.encode(doc["text"])[:MAX_TOKENS]
        logits = sess.run(None, {"ids": np.array([ids], dtype=np.int64)})[0]
        counts[int(logits.argmax())] += 1
        if stats:
            now = time.time()
            stats.write(f"{now:.4f} {(time.perf_counter() - t0) * 1000:.3f} ok\n")
            if now - last > 0.3:
                stats.flush(); last = now


if __name__ == "__main__":
    main()
