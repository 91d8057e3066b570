"""Intent classification: a WordPiece tokenizer and a small BERT in a sync FastAPI endpoint.

The tokenizer is Hugging Face ``tokenizers`` WordPiece over a made-up vocabulary; the model
is transformers' BertModel from a small config (random weights, nothing downloaded), run
with torch's intra-op pool at one thread (TORCH_THREADS), as deployments set it.
MODEL_LAYERS sets the encoder's depth: the model's compute is the cost.
"""

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import setting_int, tiny_bert, wordpiece_tokenizer

torch.set_num_threads(setting_int("TORCH_THREADS", 1))
tok, vocab_size = wordpiece_tokenizer(max_len=128)
model = tiny_bert(layers=setting_int("MODEL_LAYERS", 6), hidden=256, vocab_size=vocab_size)
head = torch.nn.Linear(256, 12)
app = FastAPI()


class Utterance(BaseModel):
    text: str


def handle(text: str) -> int:
    enc = tok.encode(text)
    ids = torch.tensor([enc.ids])
    mask = torch.tensor([enc.attention_mask])
    with torch.inference_mode():
        pooled = model(input_ids=ids, attention_mask=mask).pooler_output
        return int(head(pooled).argmax())


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/intent")
def intent(u: Utterance) -> dict:
    return {"intent": handle(u.text)}
