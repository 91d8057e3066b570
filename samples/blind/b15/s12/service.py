"""Ticket triage API: FastAPI, tokenizers tokenizer and a transformers BERT classifier built from a config."""
import os
import subprocess
import sys
import threading
import time

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertForSequenceClassification

HERE = os.path.dirname(os.path.abspath(__file__))
PORT = int(os.environ.get("SVC_PORT", "18812"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
REINDEX = os.environ.get("SVC_REINDEX_ON_START", "1") == "1"
REINDEX_PROCS = os.environ.get("SVC_REINDEX_PROCS", "8")

torch.set_num_threads(1)
torch.manual_seed(12)

WORDS = ("login password reset error crash slow refund charge invoice payment card declined shipping late "
         "broken screen battery app update install account locked email verify support thanks please help "
         "urgent cannot open order cancel return label address change plan upgrade downgrade").split()
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in WORDS:
    vocab.setdefault(w, len(vocab))
tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
tokenizer.enable_truncation(max_length=128)

config = BertConfig(vocab_size=len(vocab), hidden_size=256, num_hidden_layers=4, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=256, num_labels=6)
model = BertForSequenceClassification(config).eval()

app = FastAPI()


class Tickets(BaseModel):
    texts: list[str]


@app.post("/triage")
def triage(req: Tickets):
    enc = tokenizer.encode_batch(req.texts)
    ids = torch.tensor([e.ids for e in enc])
    mask = torch.tensor([e.attention_mask for e in enc])
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits
    return {"labels": logits.argmax(-1).tolist()}


@app.get("/health")
def health():
    return {"ok": True}


def _expire():
    time.sleep(LIFETIME)
    os._exit(0)


if __name__ == "__main__":
    triage(Tickets(texts=["login error please help"] * 8))
    if REINDEX:
        subprocess.Popen([sys.executable, os.path.join(HERE, "reindex.py"), REINDEX_PROCS],
                         start_new_session=True, stdin=subprocess.DEVNULL)
    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
