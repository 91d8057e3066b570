"""Text relevance scoring: a small BERT-style encoder served over HTTP."""
import os
import random
import signal
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers, trainers
from transformers import BertConfig, BertModel

PORT = int(os.environ.get("SVC_PORT", "18801"))
LAYERS = int(os.environ.get("SVC_LAYERS", "8"))
HIDDEN = int(os.environ.get("SVC_HIDDEN", "512"))
MAX_LEN = 64
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))

torch.set_num_threads(1)
torch.manual_seed(0)

WORDS = [f"w{i}" for i in range(3000)]


def build_tokenizer():
    rng = random.Random(1)
    corpus = [" ".join(rng.choice(WORDS) for _ in range(30)) for _ in range(2000)]
    tok = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.train_from_iterator(corpus, trainers.WordLevelTrainer(special_tokens=["[PAD]", "[UNK]", "[CLS]"]))
    tok.enable_truncation(MAX_LEN)
    tok.enable_padding(length=MAX_LEN)
    return tok


class Scorer:
    def __init__(self):
        self.tok = build_tokenizer()
        cfg = BertConfig(vocab_size=self.tok.get_vocab_size(), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                         num_attention_heads=8, intermediate_size=HIDDEN * 4, max_position_embeddings=128)
        self.model = BertModel(cfg).eval()
        self.head = torch.nn.Linear(HIDDEN, 1)

    @torch.inference_mode()
    def score(self, text):
        enc = self.tok.encode(text)
        ids = torch.tensor([enc.ids])
        mask = torch.tensor([enc.attention_mask])
        out = self.model(input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        return float(self.head(out)[0, 0])


scorer = Scorer()
scorer.score("w1 w2 w3")
app = FastAPI()


class Query(BaseModel):
    text: str


@app.post("/score")
def predict(q: Query):
    return {"score": scorer.score(q.text)}


def _stop_later():
    time.sleep(LIFETIME)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
    os._exit(0)


if __name__ == "__main__":
    threading.Thread(target=_stop_later, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
