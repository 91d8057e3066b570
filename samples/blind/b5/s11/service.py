"""Support-ticket tagger: consumes tickets (JSON lines) from stdin, tokenizes with a WordPiece tokenizer
trained at start-up, tags with a small transformer encoder, appends results to an output log.

Env:
  SVC_MAX_LEN   truncation length (default 96)
"""
import json
import os
import random
import sys
import time

import torch
from tokenizers import BertWordPieceTokenizer
from transformers import BertConfig, BertForSequenceClassification

MAX_LEN = int(os.environ.get("SVC_MAX_LEN", "96"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")
TAGS = ["billing", "login", "shipping", "bug", "feature", "account", "other"]

torch.set_num_threads(1)
torch.manual_seed(1)


def corpus(rng, n):
    syl = ["da", "me", "ko", "ri", "su", "ta", "ne", "po", "li", "va", "ing", "er", "ly", "tion"]
    words = ["".join(rng.choice(syl) for _ in range(rng.randint(1, 3))) for _ in range(1500)]
    return [" ".join(rng.choices(words, k=rng.randint(10, 60))) for _ in range(n)]


def main():
    tok = BertWordPieceTokenizer(lowercase=True)
    tok.train_from_iterator(corpus(random.Random(0), 3000), vocab_size=3000)
    tok.enable_truncation(MAX_LEN)
    cfg = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                     intermediate_size=1024, max_position_embeddings=128, num_labels=len(TAGS))
    model = BertForSequenceClassification(cfg).eval()
    out = open(STATS, "a", buffering=1) if STATS else None
    log = open(os.devnull, "w")
    with torch.inference_mode():
        model(input_ids=torch.tensor([tok.encode("warm up").ids]))
    if READY:
        open(READY, "w").close()
    for line in sys.stdin:
        if not line.strip():
            continue
        job = json.loads(line)
        t0 = time.time()
        ids = torch.tensor([tok.encode(job["text"]).ids])
        with torch.inference_mode():
            logits = model(input_ids=ids).logits[0]
        tag = TAGS[int(logits.argmax())]
        log.write(json.dumps({"id": job["id"], "tag": tag}) + "\n")
        t1 = time.time()
        if out:
            out.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")


if __name__ == "__main__":
    main()
