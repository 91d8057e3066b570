"""Text classification API (FastAPI, async) with a BERT-style encoder."""
import asyncio
import os
import signal
import threading
from concurrent.futures import ThreadPoolExecutor

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import BertConfig, BertForSequenceClassification

PORT = int(os.environ.get("SVC_PORT", "18802"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "8"))
MAX_LEN = 128

torch.set_num_threads(1)
torch.manual_seed(0)

WORDS = [f"w{i}" for i in range(8000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2}
vocab.update({w: i + 3 for i, w in enumerate(WORDS)})
tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = Whitespace()
tokenizer.enable_truncation(MAX_LEN)
tokenizer.enable_padding(length=MAX_LEN, pad_id=0)

config = BertConfig(vocab_size=len(vocab), hidden_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=MAX_LEN, num_labels=5)
model = BertForSequenceClassification(config).eval()
pool = ThreadPoolExecutor(max_workers=2)


def classify(text: str):
    enc = tokenizer.encode(text)
    ids = torch.tensor([enc.ids])
    mask = torch.tensor([enc.attention_mask])
    with torch.inference_mode():
        logits = model(input_ids=ids, attention_mask=mask).logits[0]
    return int(logits.argmax()), logits.softmax(-1).tolist()


app = FastAPI()


class Req(BaseModel):
    text: str


@app.post("/classify")
async def classify_endpoint(req: Req):
    loop = asyncio.get_running_loop()
    label, probs = await loop.run_in_executor(pool, classify, req.text)
    return {"label": label, "probs": probs}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
