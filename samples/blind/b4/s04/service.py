"""Question-answer relevance service."""
import asyncio
import os
from concurrent.futures import ThreadPoolExecutor

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(1)

SIZES = {
    "base": dict(hidden_size=384, num_hidden_layers=6, num_attention_heads=6, intermediate_size=1536),
    "small": dict(hidden_size=192, num_hidden_layers=2, num_attention_heads=3, intermediate_size=768),
}
SIZE = os.environ.get("SVC_MODEL_SIZE", "base")


def corpus(n=2000):
    import random
    rng = random.Random(3)
    sy = ["re", "la", "tiv", "con", "po", "ser", "ment", "ab", "ing", "ed", "un", "der", "sta", "nd"]
    words = ["".join(rng.choice(sy) for _ in range(rng.randint(1, 4))) for _ in range(1500)]
    for _ in range(n):
        yield " ".join(rng.choice(words) for _ in range(20))


def build_tokenizer():
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus(), trainers.BpeTrainer(vocab_size=4000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]"]))
    tok.enable_truncation(126)
    return tok


class Scorer:
    def __init__(self):
        cfg = BertConfig(vocab_size=4096, max_position_embeddings=160, num_labels=2, **SIZES[SIZE])
        torch.manual_seed(0)
        self.model = BertForSequenceClassification(cfg).eval()
        self.tok = build_tokenizer()

    def score(self, question, passage):
        enc = self.tok.encode(question, passage)
        ids = torch.tensor([[2] + enc.ids[:126] + [3]])
        with torch.inference_mode():
            logits = self.model(input_ids=ids).logits
        return float(torch.softmax(logits, -1)[0, 1])


app = FastAPI()
scorer = Scorer()
pool = ThreadPoolExecutor(max_workers=2)


class Pair(BaseModel):
    question: str
    passage: str


@app.get("/health")
async def health():
    return {"ok": True}


@app.post("/relevance")
async def predict(pair: Pair):
    loop = asyncio.get_running_loop()
    p = await loop.run_in_executor(pool, scorer.score, pair.question, pair.passage)
    return {"relevance": p}
