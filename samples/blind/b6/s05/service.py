"""Review sentiment consumer: reads JSON lines on stdin, micro-batches them, runs a BERT encoder, writes results."""
import json
import os
import signal
import sys
import threading
import time

import torch
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
from transformers import BertConfig, BertModel

MODEL = os.environ.get("SVC_MODEL", "base")
BATCH = 8
torch.set_num_threads(1)
torch.manual_seed(0)


def _lifetime():
    time.sleep(float(os.environ.get("SVC_LIFETIME", "120")))
    os._exit(0)


threading.Thread(target=_lifetime, daemon=True).start()

W = ("great product terrible service fast delivery broken screen love it would buy again "
     "refund requested battery lasts long poor quality excellent value too expensive").split()
tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
tok.normalizer = normalizers.BertNormalizer(lowercase=True)
tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
tok.train_from_iterator([" ".join(W[i:] + W[:i]) for i in range(len(W))] * 50,
                        trainers.WordPieceTrainer(vocab_size=500, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
tok.enable_padding(pad_id=0)
tok.enable_truncation(128)

SIZES = {"base": dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024),
         "distilled": dict(hidden_size=192, num_hidden_layers=2, num_attention_heads=4, intermediate_size=768)}
cfg = BertConfig(vocab_size=tok.get_vocab_size(), max_position_embeddings=160, **SIZES[MODEL])
encoder = BertModel(cfg).eval()
head = torch.nn.Linear(cfg.hidden_size, 3).eval()

stats = open(os.environ["SVC_STATS_PATH"], "a", buffering=1)
out = open(os.devnull, "w")


def predict(batch):
    enc = tok.encode_batch([b["text"] for b in batch])
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.inference_mode():
        h = encoder(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        return head(h).argmax(1).tolist()


predict([{"text": "warm up"}])
open(os.environ["SVC_READY_PATH"], "w").close()

batch = []
for line in sys.stdin:
    batch.append(json.loads(line))
    if len(batch) < BATCH:
        continue
    labels = predict(batch)
    now = time.time()
    for b, y in zip(batch, labels):
        out.write(f'{b["id"]} {y}\n')
        stats.write(f"{now:.4f} {(now - b['ts']) * 1000:.3f} ok\n")
    batch = []
