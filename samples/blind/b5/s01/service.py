"""Review-sentiment classifier: FastAPI + a small BERT encoder.

Env:
  SVC_PORT          listen port (default 18301)
  SVC_TOKENIZER     "python" (in-house WordPiece port) or "fast" (HF tokenizers)
  SVC_MAX_LEN       truncation length (default 128)
"""
import os
import random
import unicodedata

import torch
import uvicorn
from fastapi import FastAPI
from pydantic import BaseModel
from tokenizers import BertWordPieceTokenizer
from transformers import BertConfig, BertForSequenceClassification

torch.set_num_threads(1)
random.seed(7)
torch.manual_seed(7)

PORT = int(os.environ.get("SVC_PORT", "18301"))
TOKENIZER_KIND = os.environ.get("SVC_TOKENIZER", "python")
MAX_LEN = int(os.environ.get("SVC_MAX_LEN", "128"))

SYL = ["ka", "lo", "mi", "ren", "to", "sha", "vel", "dor", "qui", "an", "es", "ta", "ri", "on", "ful",
       "ness", "ing", "pre", "un", "bel", "cor", "das", "ex", "im", "jo", "lu", "nor", "pa", "sti", "wer"]


def make_corpus(n=4000):
    words = ["".join(random.choice(SYL) for _ in range(random.randint(1, 4))) for _ in range(3000)]
    lines = []
    for _ in range(n):
        ws = random.choices(words, k=random.randint(8, 30))
        lines.append(" ".join(w.capitalize() if random.random() < 0.1 else w for w in ws) + random.choice([".", "!", "?", ","]))
    return lines


def train_tokenizer():
    tok = BertWordPieceTokenizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.train_from_iterator(make_corpus(), vocab_size=4000, min_frequency=2)
    return tok


# --- in-house WordPiece port (kept in sync with the training-side preprocessing) ---

def _is_whitespace(ch):
    if ch in (" ", "\t", "\n", "\r"):
        return True
    return unicodedata.category(ch) == "Zs"


def _is_control(ch):
    if ch in ("\t", "\n", "\r"):
        return False
    return unicodedata.category(ch).startswith("C")


def _is_punctuation(ch):
    cp = ord(ch)
    if (33 <= cp <= 47) or (58 <= cp <= 64) or (91 <= cp <= 96) or (123 <= cp <= 126):
        return True
    return unicodedata.category(ch).startswith("P")


class WordPiece:
    def __init__(self, vocab, unk="[UNK]", max_chars=100):
        self.vocab = vocab
        self.unk = unk
        self.max_chars = max_chars

    def _clean(self, text):
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or _is_control(ch):
                continue
            out.append(" " if _is_whitespace(ch) else ch)
        return "".join(out)

    def _strip_accents(self, text):
        text = unicodedata.normalize("NFD", text)
        return "".join(ch for ch in text if unicodedata.category(ch) != "Mn")

    def _split_punct(self, word):
        pieces, cur = [], []
        for ch in word:
            if _is_punctuation(ch):
                if cur:
                    pieces.append("".join(cur))
                    cur = []
                pieces.append(ch)
            else:
                cur.append(ch)
        if cur:
            pieces.append("".join(cur))
        return pieces

    def _wordpiece(self, word):
        if len(word) > self.max_chars:
            return [self.unk]
        out, start = [], 0
        while start < len(word):
            end = len(word)
            cur = None
            while start < end:
                sub = word[start:end]
                if start > 0:
                    sub = "##" + sub
                if sub in self.vocab:
                    cur = sub
                    break
                end -= 1
            if cur is None:
                return [self.unk]
            out.append(cur)
            start = end
        return out

    def encode(self, text, max_len):
        text = self._clean(text)
        toks = []
        for w in text.strip().split():
            w = self._strip_accents(w.lower())
            for p in self._split_punct(w):
                toks.extend(self._wordpiece(p))
        toks = ["[CLS]"] + toks[: max_len - 2] + ["[SEP]"]
        return [self.vocab.get(t, self.vocab[self.unk]) for t in toks]


class Classifier:
    def __init__(self):
        self.fast = train_tokenizer()
        self.fast.enable_truncation(MAX_LEN)
        self.vocab = self.fast.get_vocab()
        self.py = WordPiece(self.vocab)
        cfg = BertConfig(vocab_size=len(self.vocab), hidden_size=128, num_hidden_layers=2, num_attention_heads=2,
                         intermediate_size=512, max_position_embeddings=256, num_labels=3)
        self.model = BertForSequenceClassification(cfg).eval()

    def encode(self, text):
        if TOKENIZER_KIND == "fast":
            return self.fast.encode(text).ids
        return self.py.encode(text, MAX_LEN)

    @torch.inference_mode()
    def predict(self, text):
        ids = self.encode(text)
        x = torch.tensor([ids])
        logits = self.model(input_ids=x, attention_mask=torch.ones_like(x)).logits[0]
        p = torch.softmax(logits, -1)
        return {"label": ["neg", "neu", "pos"][int(p.argmax())], "score": float(p.max()), "tokens": len(ids)}


clf = Classifier()
app = FastAPI()


class Review(BaseModel):
    text: str


@app.get("/health")
def health():
    return {"ok": True}


@app.post("/predict")
def predict(r: Review):
    return clf.predict(r.text)


if __name__ == "__main__":
    uvicorn.run(app, host="127.0.0.1", port=PORT, log_level="warning", access_log=False)
