"""Query embeddings: a small BERT behind FastAPI under ``uvicorn --workers 2``.

Each worker tokenises the query (``tokenizers`` WordPiece, made-up vocabulary) and returns
the mean-pooled embedding of a transformers BertModel (small config, random weights),
torch at one intra-op thread per worker. MODEL_LAYERS sets the encoder's depth.
"""

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from zoolib import setting_int, tiny_bert, wordpiece_tokenizer

torch.set_num_threads(setting_int("TORCH_THREADS", 1))
tok, vocab_size = wordpiece_tokenizer(max_len=96)
encoder = tiny_bert(layers=setting_int("MODEL_LAYERS", 6), hidden=256, vocab_size=vocab_size)
app = FastAPI()


class Query(BaseModel):
    text: str


@app.get("/health")
def health() -> dict:
    return {"ok": True}


@app.post("/embed")
def embed(q: Query) -> dict:
    enc = tok.encode(q.text)
    with torch.inference_mode():
        out = encoder(input_ids=torch.tensor([enc.ids])).last_hidden_state
    return {"embedding": out.mean(dim=1)[0, :8].tolist()}
