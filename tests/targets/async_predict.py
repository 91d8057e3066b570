"""A moderation service as a team writes it: FastAPI on uvicorn, one ``async def predict``
endpoint made inside ``create_app`` that cleans the text in plain Python, tokenizes it
(tokenizers) and runs a transformers model built from a config, all on the event loop.
Usage:
  async_predict.py serve            prints "ready PORT", serves until killed
  async_predict.py load PORT SECONDS CLIENTS
                                    posts from CLIENTS threads; prints one JSON line
  async_predict.py split [N]        times the stages in-process; prints one JSON line
CLEAN=0 skips the cleaning (the counterfactual); TORCH_THREADS=N sizes torch's pool.
"""

import json
import os
import sys
import threading
import time
import urllib.request

CLEAN = os.environ.get("CLEAN", "1") == "1"  # CLEAN=0: the counterfactual, no cleaning
TORCH_THREADS = int(os.environ.get("TORCH_THREADS", "0"))  # 0: torch's default pool
WORDS = [
    "the",
    "quick",
    "brown",
    "fox",
    "jumps",
    "over",
    "lazy",
    "dog",
    "great",
    "service",
    "terrible",
    "product",
    "ok",
]


FOLD = {"\u00e9": "e", "\u00e8": "e", "\u00e0": "a", "\u00fc": "u", "\u00f6": "o", "\u2019": "'"}


MASKED = [a + b for a in "bcdfghjklmnpqrstvwxz" for b in "aeiouy"] + [
    b + a for a in "bcdfghjklmnpqrstvwxz" for b in "aeiouy"
]


def clean(text):
    # a character at a time, as such cleaning is often written: the CPU the service spends
    # before the model
    out = []
    last = ""
    for ch in text:
        ch = FOLD.get(ch, ch)
        if ch.isalnum() or ch == " ":
            ch = ch.lower()
        elif ch in "!?.,;:":
            ch = " "
        else:
            continue
        if ch != last or ch.isalpha():  # squeeze runs of spaces and digits
            out.append(ch)
        last = ch
    words = []
    for w in "".join(out).split():
        if len(w) > 1 and not w.isdigit():
            for bad in MASKED:
                if bad in w:
                    w = w.replace(bad, "*" * len(bad))
            words.append(w.strip("'"))
    return " ".join(words)


def build():
    import torch
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import BertConfig, BertModel

    vocab = {"[UNK]": 0, **{w: i + 1 for i, w in enumerate(WORDS)}}
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = Whitespace()
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=128,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=256,
        max_position_embeddings=256,
    )
    torch.manual_seed(0)
    if TORCH_THREADS:
        torch.set_num_threads(TORCH_THREADS)
    model = BertModel(config).eval()
    return tok, model


def create_app():
    import torch
    from fastapi import FastAPI, Request

    tok, model = build()
    app = FastAPI()

    @app.post("/predict")
    async def predict(request: Request):
        doc = json.loads(await request.body())
        text = clean(doc["text"]) if CLEAN else doc["text"].lower()
        ids = tok.encode(text).ids[:128]
        with torch.no_grad():
            out = model(torch.tensor([ids]))
        return {"score": float(out.pooler_output[0, 0]), "n": len(ids)}

    return app


def document(i):
    words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(1200)]
    return " ".join(w.upper() + "!" if k % 5 == 0 else w for k, w in enumerate(words))


def serve():
    import socket

    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(create_app(), log_level="warning", access_log=False)
    server = uvicorn.Server(config)
    print(f"ready {port}", flush=True)
    server.run(sockets=[sock])


def load(port, seconds, clients):
    url = f"http://127.0.0.1:{port}/predict"
    end = time.monotonic() + seconds
    done = [0] * clients

    def client(c):
        i = c
        while time.monotonic() < end:
            body = json.dumps({"text": document(i)}).encode()
            req = urllib.request.Request(url, body, {"Content-Type": "application/json"})
            try:
                urllib.request.urlopen(req, timeout=30).read()
                done[c] += 1
            except OSError:
                time.sleep(0.05)
            i += clients

    threads = [threading.Thread(target=client, args=(c,)) for c in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(json.dumps({"requests_per_s": round(sum(done) / seconds, 1)}), flush=True)


def split(n):
    import torch

    tok, model = build()
    spent = {"clean": 0.0, "tokenize": 0.0, "model": 0.0}
    for i in range(n):
        t0 = time.perf_counter()
        text = clean(document(i))
        t1 = time.perf_counter()
        ids = tok.encode(text).ids[:128]
        t2 = time.perf_counter()
        with torch.no_grad():
            model(torch.tensor([ids]))
        t3 = time.perf_counter()
        spent["clean"] += t1 - t0
        spent["tokenize"] += t2 - t1
        spent["model"] += t3 - t2
    total = sum(spent.values())
    print(json.dumps({k: round(v / total, 3) for k, v in spent.items()}), flush=True)


if __name__ == "__main__":
    what = sys.argv[1]
    if what == "serve":
        serve()
    elif what == "load":
        load(int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]))
    else:
        split(int(sys.argv[2]) if len(sys.argv) > 2 else 200)
