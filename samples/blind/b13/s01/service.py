"""Sentence encoder API: tokenises text and returns a pooled embedding."""
import os
import threading
import time

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertModel
import uvicorn

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "8"))
MAX_LEN = 96

torch.manual_seed(0)
torch.set_num_threads(1)

WORDS = [f"w{i}" for i in range(5000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for i, w in enumerate(WORDS):
    vocab[w] = i + 4
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()
tok.enable_truncation(MAX_LEN)
tok.enable_padding(length=MAX_LEN, pad_id=0, pad_token="[PAD]")

cfg = BertConfig(vocab_size=len(vocab), hidden_size=256, num_hidden_layers=LAYERS,
                 num_attention_heads=4, intermediate_size=1024, max_position_embeddings=128)
encoder = BertModel(cfg).eval()

app = FastAPI()


class Item(BaseModel):
    text: str


@app.post("/embed")
def embed(item: Item):
    enc = tok.encode(item.text)
    ids = torch.tensor([enc.ids])
    mask = torch.tensor([enc.attention_mask])
    with torch.inference_mode():
        out = encoder(input_ids=ids, attention_mask=mask).last_hidden_state
        vec = (out * mask.unsqueeze(-1)).sum(1) / mask.sum()
    return {"dim": int(vec.shape[-1]), "norm": float(vec.norm())}


def _stop():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        encoder(input_ids=torch.ones(1, MAX_LEN, dtype=torch.long))
    threading.Thread(target=_stop, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
