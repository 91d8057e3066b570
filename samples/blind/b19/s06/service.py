"""Review topic classifier API (FastAPI): BERT-style tokenizer + small encoder built from a config."""
import os
import random
import tempfile
import threading

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from transformers import BertConfig, BertModel, BertTokenizer
from transformers.models.bert.tokenization_bert_legacy import BertTokenizerLegacy

PORT = int(os.environ.get("SVC_PORT", "18806"))
LIFETIME = float(os.environ.get("SVC_LIFETIME", "60"))
USE_FAST = os.environ.get("SVC_FAST_TOKENIZER", "0") == "1"
MAX_LEN = 64

torch.set_num_threads(1)
torch.manual_seed(0)


def write_vocab():
    rnd = random.Random(0)
    letters = "abcdefghijklmnopqrstuvwxyz"
    special = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = set()
    while len(words) < 6000:
        words.add("".join(rnd.choice(letters) for _ in range(rnd.randint(2, 7))))
    pieces = set()
    while len(pieces) < 3000:
        pieces.add("##" + "".join(rnd.choice(letters) for _ in range(rnd.randint(1, 3))))
    vocab = special + list(letters) + ["##" + c for c in letters] + sorted(words) + sorted(pieces)
    path = os.path.join(tempfile.mkdtemp(prefix="vocab-"), "vocab.txt")
    with open(path, "w") as f:
        f.write("\n".join(vocab) + "\n")
    return path, len(vocab)


VOCAB_PATH, VOCAB_SIZE = write_vocab()
tokenizer = (BertTokenizer if USE_FAST else BertTokenizerLegacy)(VOCAB_PATH, do_lower_case=True)
cfg = BertConfig(vocab_size=VOCAB_SIZE, hidden_size=128, num_hidden_layers=1, num_attention_heads=2,
                 intermediate_size=256, max_position_embeddings=128)
encoder = BertModel(cfg).eval()
head = torch.nn.Linear(128, 20).eval()
_model_lock = threading.Lock()


class Req(BaseModel):
    reviews: list[str]


app = FastAPI()


@app.post("/topics")
def topics(req: Req):
    enc = tokenizer(req.reviews, padding="max_length", truncation=True, max_length=MAX_LEN, return_tensors="pt")
    with _model_lock, torch.inference_mode():
        h = encoder(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"]).last_hidden_state[:, 0]
        top = head(h).argmax(-1)
    return {"topics": top.tolist()}


def main():
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=PORT, log_level="warning"))
    threading.Timer(LIFETIME, lambda: setattr(server, "should_exit", True)).start()
    server.run()


if __name__ == "__main__":
    main()
