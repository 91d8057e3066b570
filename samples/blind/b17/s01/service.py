"""Text classification API: FastAPI (sync handlers) with a BERT-style encoder built from a config."""
import os
import signal
import tempfile
import threading

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertModel, BertTokenizerFast
from transformers.models.bert import BertTokenizerLegacy

PORT = int(os.environ.get("SVC_PORT", "18801"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
TOKENIZER = os.environ.get("SVC_TOKENIZER", "python")
MAX_LEN = 128

torch.set_num_threads(1)
torch.manual_seed(0)


def make_vocab(path):
    letters = "abcdefghijklmnopqrstuvwxyz"
    syll = [a + b for a in "bcdfgklmnprstv" for b in "aeiou"]
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(letters) + ["##" + c for c in letters]
    words += syll + ["##" + s for s in syll]
    words += [a + b for a in syll[:40] for b in syll[:40]]
    with open(path, "w") as f:
        f.write("\n".join(words) + "\n")
    return len(words)


vocab_dir = tempfile.mkdtemp(prefix="vocab-")
vocab_file = os.path.join(vocab_dir, "vocab.txt")
vocab_size = make_vocab(vocab_file)
if TOKENIZER == "fast":
    tokenizer = BertTokenizerFast(vocab_file=vocab_file)
else:
    tokenizer = BertTokenizerLegacy(vocab_file=vocab_file)

config = BertConfig(vocab_size=vocab_size, hidden_size=64, num_hidden_layers=1, num_attention_heads=2,
                    intermediate_size=128, max_position_embeddings=MAX_LEN)
encoder = BertModel(config).eval()
head = torch.nn.Linear(64, 4).eval()

app = FastAPI()


class Doc(BaseModel):
    text: str


@app.post("/classify")
def classify(doc: Doc):
    enc = tokenizer(doc.text, truncation=True, max_length=MAX_LEN, return_tensors="pt")
    with torch.inference_mode():
        out = encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"])
        logits = head(out.last_hidden_state[:, 0])
    return {"label": int(logits.argmax(-1)), "tokens": int(enc["input_ids"].shape[1])}


if __name__ == "__main__":
    threading.Timer(LIFETIME, lambda: os.kill(os.getpid(), signal.SIGTERM)).start()
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning")
