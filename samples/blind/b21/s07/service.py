"""Product-review sentiment API: uvicorn with 2 worker processes, a BERT classifier built from a config."""
import os
import re
import signal
import threading
import time

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18807"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
MAX_LEN = 128
VOCAB_SIZE = 8000
_word = re.compile(r"[a-z0-9]+")

model = None


def load_model():
    torch.set_num_threads(1)
    torch.manual_seed(0)
    config = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=384, num_hidden_layers=LAYERS, num_attention_heads=6,
                        intermediate_size=1536, max_position_embeddings=MAX_LEN, num_labels=3)
    return BertForSequenceClassification(config).eval()


def tokenize(text):
    ids = [2]
    for w in _word.findall(text.lower()):
        h = 5
        for ch in w:
            h = (h * 131 + ord(ch)) % 1000003
        ids.append(4 + h % (VOCAB_SIZE - 4))
    return ids[:MAX_LEN - 1] + [3]


app = FastAPI()


@app.on_event("startup")
def _startup():
    global model
    model = load_model()
    with torch.no_grad():
        model(input_ids=torch.tensor([tokenize("warm up")]))


class Review(BaseModel):
    text: str


@app.post("/predict")
def predict(r: Review):
    ids = torch.tensor([tokenize(r.text)])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0]
    probs = torch.softmax(logits, -1)
    return {"label": int(probs.argmax()), "p": [round(float(p), 4) for p in probs]}


@app.get("/health")
def health():
    return "ok"


if __name__ == "__main__":
    import uvicorn

    def _expire():
        time.sleep(LIFETIME)
        os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=_expire, daemon=True).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, timeout_worker_healthcheck=60,
                log_level="warning", access_log=False)
