"""Text classification service: small BERT-style encoder behind FastAPI."""
import os
import signal
import threading

import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18851"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
SEQ = int(os.environ.get("SVC_SEQ", "128"))

torch.set_num_threads(1)
torch.manual_seed(0)

WORDS = [f"w{i}" for i in range(5000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in WORDS:
    vocab[w] = len(vocab)
tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
tokenizer.enable_truncation(SEQ)
tokenizer.enable_padding(length=SEQ, pad_id=0, pad_token="[PAD]")

config = BertConfig(vocab_size=len(vocab), hidden_size=384, num_hidden_layers=LAYERS,
                    num_attention_heads=6, intermediate_size=1536, max_position_embeddings=256,
                    num_labels=4)
model = BertForSequenceClassification(config).eval()

app = FastAPI()


class Item(BaseModel):
    text: str


@app.post("/classify")
def classify(item: Item):
    enc = tokenizer.encode(item.text)
    ids = torch.tensor([enc.ids])
    mask = torch.tensor([enc.attention_mask])
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits[0]
    probs = torch.softmax(logits, -1).tolist()
    return {"label": int(max(range(len(probs)), key=probs.__getitem__)), "probs": probs}


@app.get("/health")
def health():
    return {"ok": True}


if __name__ == "__main__":
    import uvicorn
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGINT)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
