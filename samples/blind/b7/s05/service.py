"""Ticket router: reads ticket events from stdin, embeds with a BERT encoder, assigns a queue. No port."""
import json
import os
import signal
import sys
import threading
import time

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
from transformers import BertConfig, BertModel

LIFETIME = float(os.environ.get("SVC_LIFETIME", "300"))
LAYERS = int(os.environ.get("SVC_ENCODER_LAYERS", "6"))
STATS = os.environ.get("SVC_STATS_PATH")
READY = os.environ.get("SVC_READY_PATH")

torch.set_num_threads(1)
torch.manual_seed(0)

LETTERS = "abcdefghijklmnopqrstuvwxyz"
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for a in LETTERS:
    vocab[a] = len(vocab)
    vocab["##" + a] = len(vocab)
    for b in LETTERS:
        vocab[a + b] = len(vocab)
        vocab["##" + a + b] = len(vocab)
tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.enable_truncation(126)

cfg = BertConfig(vocab_size=len(vocab), hidden_size=384, num_hidden_layers=LAYERS, num_attention_heads=6,
                 intermediate_size=1536, max_position_embeddings=160)
encoder = BertModel(cfg, add_pooling_layer=False).eval()
QUEUES = ["it-desk", "billing", "logistics", "access", "hardware", "other"]
centroids = torch.nn.functional.normalize(torch.randn(len(QUEUES), 384), dim=-1)

stats = open(STATS, "a", buffering=1) if STATS else None
done = [0]
t_start = time.time()


def finish(*_):
    print(json.dumps({"processed": done[0], "uptime_s": round(time.time() - t_start, 1)}), file=sys.stderr, flush=True)
    if stats:
        stats.flush()
    os._exit(0)


signal.signal(signal.SIGTERM, finish)
threading.Timer(LIFETIME, finish).start()

with torch.inference_mode():
    encoder(input_ids=torch.tensor([[2, 3]]))
if READY:
    open(READY, "w").close()

for line in sys.stdin:
    t0 = time.time()
    ev = json.loads(line)
    ids = torch.tensor([[2] + tok.encode(ev["body"]).ids + [3]])
    with torch.inference_mode():
        h = encoder(input_ids=ids).last_hidden_state[0, 0]
    q = int((centroids @ torch.nn.functional.normalize(h, dim=0)).argmax())
    sys.stdout.write(f'{ev["ticket"]} {QUEUES[q]}\n')
    done[0] += 1
    t1 = time.time()
    if stats:
        stats.write(f"{t1:.4f} {(t1 - t0) * 1000:.3f} ok\n")
finish()
