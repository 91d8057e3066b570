"""Text scoring service: tokenise a query and run a small BERT-style encoder."""
import os
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertModel

torch.set_num_threads(1)
torch.manual_seed(0)

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "8"))
HIDDEN = int(os.environ.get("SVC_HIDDEN", "384"))

words = [f"w{i}" for i in range(5000)]
vocab = {"[UNK]": 0, "[PAD]": 1, **{w: i + 2 for i, w in enumerate(words)}}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.Whitespace()

cfg = BertConfig(vocab_size=len(vocab), hidden_size=HIDDEN, num_hidden_layers=LAYERS,
                 num_attention_heads=6, intermediate_size=HIDDEN * 4, max_position_embeddings=256)
model = BertModel(cfg).eval()
head = torch.nn.Linear(HIDDEN, 1)

app = FastAPI()


class Query(BaseModel):
    text: str


@app.post("/score")
def score(q: Query):
    ids = tok.encode(q.text).ids[:128]
    with torch.inference_mode():
        x = torch.tensor([ids])
        h = model(input_ids=x).last_hidden_state[:, 0]
        s = head(h).item()
    return {"score": s, "tokens": len(ids)}


def _stop_later():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    with torch.inference_mode():
        model(input_ids=torch.ones(1, 64, dtype=torch.long))
    threading.Thread(target=_stop_later, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
