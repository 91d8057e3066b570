"""Passage ranking API: tokenises a query/passage pair and scores it with a BERT cross-encoder."""
import os
import random
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "120"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
MAX_LEN = 128

torch.set_num_threads(1)
torch.manual_seed(0)

WORDS = [f"w{i}" for i in range(4000)]


def build_tokenizer():
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]"] + WORDS)}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B [SEP]",
        special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.enable_truncation(MAX_LEN)
    return tok


class Ranker:
    def __init__(self, layers):
        cfg = BertConfig(vocab_size=4100, hidden_size=256, num_hidden_layers=layers,
                         num_attention_heads=4, intermediate_size=1024, num_labels=1,
                         max_position_embeddings=256)
        self.model = BertForSequenceClassification(cfg).eval()
        self.tok = build_tokenizer()

    def score(self, query, passage):
        enc = self.tok.encode(query, passage)
        ids = torch.tensor([enc.ids])
        with torch.inference_mode():
            out = self.model(input_ids=ids, attention_mask=torch.ones_like(ids))
        return float(out.logits[0, 0])


ranker = Ranker(LAYERS)
ranker.score("warm up", "warm up passage")
app = FastAPI()


class Pair(BaseModel):
    query: str
    passage: str


@app.post("/rank")
def rank(p: Pair):
    return {"score": ranker.score(p.query, p.passage)}


@app.get("/health")
def health():
    return {"ok": True}


def _stop():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
