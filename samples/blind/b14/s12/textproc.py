"""BERT-style text processing: basic cleaning/splitting and WordPiece lookup."""
import unicodedata

WORDS = ["great", "terrible", "battery", "screen", "delivery", "quality", "price", "support", "broken",
         "excellent", "slow", "fast", "return", "refund", "charger", "sound", "camera", "cheap", "works",
         "perfect", "disappointed", "recommend", "never", "again", "love", "hate", "size", "colour",
         "cafe", "naive", "resume"]


def build_vocab():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in WORDS:
        vocab.setdefault(w, len(vocab))
    for s in ("s", "ed", "ing"):
        vocab.setdefault("##" + s, len(vocab))
    for c in "abcdefghijklmnopqrstuvwxyz0123456789.,!?":
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    return vocab


def _is_punct(ch):
    cp = ord(ch)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(ch).startswith("P")


class BasicWordPiece:
    def __init__(self, vocab, max_chars=100):
        self.vocab = vocab
        self.max_chars = max_chars

    def _clean(self, text):
        out = []
        for ch in text:
            cp = ord(ch)
            if cp == 0 or cp == 0xFFFD or unicodedata.category(ch).startswith("C") and ch not in "\t\n\r":
                continue
            out.append(" " if ch.isspace() else ch)
        return "".join(out)

    def _strip_accents(self, text):
        return "".join(c for c in unicodedata.normalize("NFD", text) if unicodedata.category(c) != "Mn")

    def _split_punct(self, word):
        pieces, cur = [], []
        for ch in word:
            if _is_punct(ch):
                if cur:
                    pieces.append("".join(cur)); cur = []
                pieces.append(ch)
            else:
                cur.append(ch)
        if cur:
            pieces.append("".join(cur))
        return pieces

    def _wordpiece(self, word):
        if len(word) > self.max_chars:
            return [self.vocab["[UNK]"]]
        ids, start = [], 0
        while start < len(word):
            end, found = len(word), None
            while start < end:
                sub = word[start:end] if start == 0 else "##" + word[start:end]
                if sub in self.vocab:
                    found = self.vocab[sub]
                    break
                end -= 1
            if found is None:
                return [self.vocab["[UNK]"]]
            ids.append(found)
            start = end
        return ids

    def encode(self, text, length):
        text = self._strip_accents(self._clean(text).lower())
        ids = [self.vocab["[CLS]"]]
        for w in text.split():
            for p in self._split_punct(w):
                ids.extend(self._wordpiece(p))
        ids = ids[:length - 1] + [self.vocab["[SEP]"]]
        return ids + [0] * (length - len(ids))
