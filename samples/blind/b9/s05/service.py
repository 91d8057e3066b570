import os

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel

PORT = int(os.environ.get("SVC_PORT", "18751"))
MAX_LEN = 128
app = FastAPI()
state = {}

WORDS = [f"{a}{b}{c}" for a in "bcdfghklmnprstvz" for b in "aeiou" for c in "nrstlmkpdg"]


def build():
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from tokenizers.normalizers import Lowercase
    from tokenizers.pre_tokenizers import Whitespace
    from transformers import BertConfig, BertModel

    torch.set_num_threads(1)
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in WORDS:
        vocab[w] = len(vocab)
    tok = Tokenizer(WordLevel(vocab, unk_token="[UNK]"))
    tok.normalizer = Lowercase()
    tok.pre_tokenizer = Whitespace()
    tok.enable_truncation(MAX_LEN)
    tok.enable_padding(length=MAX_LEN, pad_id=0, pad_token="[PAD]")
    torch.manual_seed(0)
    cfg = BertConfig(vocab_size=len(vocab), hidden_size=256, num_hidden_layers=int(os.environ.get("SVC_LAYERS", "8")),
                     num_attention_heads=4, intermediate_size=1024, max_position_embeddings=256)
    enc = BertModel(cfg).eval()
    head = torch.nn.Linear(256, 3).eval()
    state.update(tok=tok, enc=enc, head=head)


class Review(BaseModel):
    id: int
    text: str


@app.on_event("startup")
def startup():
    build()


@app.post("/classify")
def classify(r: Review):
    e = state["tok"].encode(r.text)
    ids = torch.tensor([e.ids])
    mask = torch.tensor([e.attention_mask])
    with torch.inference_mode():
        h = state["enc"](input_ids=ids, attention_mask=mask).last_hidden_state[:, 0]
        p = torch.softmax(state["head"](h), -1)[0]
    return {"id": r.id, "sentiment": ["neg", "neu", "pos"][int(p.argmax())], "p": [round(float(v), 4) for v in p]}


@app.get("/health")
def health():
    return {"ok": True}


if __name__ == "__main__":
    import transformers.models.bert.modeling_bert  # noqa: F401  (warm the import cache before workers start)
    uvicorn.run("service:app", host="127.0.0.1", port=PORT, workers=2, log_level="warning", access_log=False)
