"""Intent classifier: FastAPI (sync handlers) under uvicorn with two worker processes."""
import os
import re
import signal
import tempfile
import threading

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertForSequenceClassification, BertTokenizerFast

PORT = int(os.environ.get("SVC_PORT", "18807"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
LAYERS = int(os.environ.get("SVC_LAYERS", "6"))
MAX_LEN = 128

torch.set_num_threads(1)
torch.manual_seed(0)

_URL = re.compile(r"https?://\S+")
_NUM = re.compile(r"\d+(?:[.,]\d+)*")
_WS = re.compile(r"\s+")
_REPEAT = re.compile(r"(.)\1{2,}")


def make_vocab(path):
    syll = [a + b for a in "bcdfgklmnprstv" for b in "aeiou"]
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "<url>", "<num>"] + list("abcdefghijklmnopqrstuvwxyz.,!?")
    words += ["##" + c for c in "abcdefghijklmnopqrstuvwxyz"] + syll + ["##" + s for s in syll]
    with open(path, "w") as f:
        f.write("\n".join(words) + "\n")
    return len(words)


def clean(text):
    text = _URL.sub(" <url> ", text)
    text = _NUM.sub(" <num> ", text)
    text = _REPEAT.sub(r"\1\1", text)
    words = []
    for w in _WS.split(text.lower()):
        if w and w not in ("a", "the", "an"):
            words.append(w.strip("\"'()[]"))
    return " ".join(words)


_vdir = tempfile.mkdtemp(prefix="vocab-")
_vfile = os.path.join(_vdir, "vocab.txt")
_vsize = make_vocab(_vfile)
tokenizer = BertTokenizerFast(vocab_file=_vfile)
config = BertConfig(vocab_size=_vsize, hidden_size=256, num_hidden_layers=LAYERS, num_attention_heads=4,
                    intermediate_size=1024, max_position_embeddings=MAX_LEN, num_labels=8)
model = BertForSequenceClassification(config).eval()

app = FastAPI()


class Utterance(BaseModel):
    text: str


@app.post("/intent")
def intent(u: Utterance):
    enc = tokenizer(clean(u.text), truncation=True, max_length=MAX_LEN, padding="max_length", return_tensors="pt")
    with torch.inference_mode():
        logits = model(**enc).logits
    return {"intent": int(logits.argmax(-1))}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning")
