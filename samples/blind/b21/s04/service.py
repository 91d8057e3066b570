"""Support-ticket embedding service (FastAPI async handlers + executor) with a BERT encoder and a feature store."""
import asyncio
import json
import os
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import torch
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import Tokenizer
from tokenizers.models import WordLevel
from tokenizers.pre_tokenizers import Whitespace
from transformers import BertConfig, BertModel

PORT = int(os.environ.get("SVC_PORT", "18804"))
STORE_PORT = int(os.environ.get("SVC_STORE_PORT", "18854"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
SHARED_CONN = os.environ.get("SVC_STORE_CONN", "shared") == "shared"
MAX_LEN = 32

WORDS = [f"w{i}" for i in range(4000)]
vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
for w in WORDS:
    vocab[w] = len(vocab)
tokenizer = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
tokenizer.pre_tokenizer = Whitespace()
tokenizer.enable_truncation(MAX_LEN)

torch.set_num_threads(1)
torch.manual_seed(0)
config = BertConfig(vocab_size=len(vocab), hidden_size=128, num_hidden_layers=1, num_attention_heads=4,
                    intermediate_size=256, max_position_embeddings=64)
model = BertModel(config).eval()


class StoreClient:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rfile = self.sock.makefile("rb")

    def get(self, key):
        self.sock.sendall(f"GET {key}\n".encode())
        return json.loads(self.rfile.readline())


_store_lock = threading.Lock()
_shared = None
_local = threading.local()


def fetch_profile(key):
    global _shared
    if SHARED_CONN:
        with _store_lock:
            if _shared is None:
                _shared = StoreClient(STORE_PORT)
            return _shared.get(key)
    client = getattr(_local, "client", None)
    if client is None:
        client = _local.client = StoreClient(STORE_PORT)
    return client.get(key)


executor = ThreadPoolExecutor(max_workers=8)
app = FastAPI()


class Ticket(BaseModel):
    customer: int
    text: str


def embed(customer, text):
    profile = np.asarray(fetch_profile(customer), dtype=np.float32)
    enc = tokenizer.encode(text)
    with torch.no_grad():
        out = model(input_ids=torch.tensor([enc.ids])).last_hidden_state.mean(1)[0].numpy()
    vec = np.concatenate([out, profile])
    return vec / (np.linalg.norm(vec) + 1e-6)


@app.post("/embed")
async def predict(t: Ticket):
    loop = asyncio.get_running_loop()
    vec = await loop.run_in_executor(executor, embed, t.customer, t.text)
    return {"dim": int(vec.shape[0]), "head": vec[:8].round(4).tolist()}


@app.get("/health")
async def health():
    return "ok"


def _expire(child):
    time.sleep(LIFETIME)
    child.terminate()
    os._exit(0)


if __name__ == "__main__":
    import uvicorn
    store = subprocess.Popen([sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "store.py"),
                              str(STORE_PORT)])
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", STORE_PORT)).close()
            break
        except OSError:
            time.sleep(0.1)
    embed(1, "w1 w2 w3")
    threading.Thread(target=_expire, args=(store,), daemon=True).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
