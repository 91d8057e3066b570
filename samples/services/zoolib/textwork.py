"""Cleaning user text the way many services do it: in plain Python, inside the handler.

``prepare`` is the careful version people write first (html.unescape, re.sub, a
unicodedata loop over every character, str methods, a dict lookup per word); ``prepare_fast``
gives the same ids through C-level calls (one NFKD pass, str.translate, one regex) and is
the fix the counterfactual applies (``CLEAN_MODE=fast``).
"""

from __future__ import annotations

import html
import re
import unicodedata

from zoolib import made_up_words

VOCAB = {w: i + 2 for i, w in enumerate(made_up_words(3000))}
TAGS = re.compile(r"<[^>]+>")
LINKS = re.compile(r"https?://\S+")
SPACES = re.compile(r"\s+")
DROP = {ord(c): " " for c in ".,!?;:\"'()[]{}-&/=<>"}


def fold(text: str) -> str:
    out = []
    for ch in unicodedata.normalize("NFKD", text):
        if unicodedata.combining(ch):
            continue
        cat = unicodedata.category(ch)
        if cat[0] in "PSZ":
            out.append(" ")
        elif cat[0] == "L":
            out.append(ch.lower())
        else:
            out.append(ch)
    return "".join(out)


def prepare(text: str, max_len: int = 256) -> list[int]:
    text = html.unescape(text)
    text = TAGS.sub(" ", text)
    text = LINKS.sub(" ", text)
    text = fold(text)
    words = [w.strip() for w in SPACES.sub(" ", text).split(" ")]
    ids = [VOCAB.get(w, 1) for w in words if w]
    return (ids + [0] * max_len)[:max_len]


def prepare_fast(text: str, max_len: int = 256) -> list[int]:
    text = LINKS.sub(" ", TAGS.sub(" ", html.unescape(text)))
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    ids = [VOCAB.get(w, 1) for w in text.lower().translate(DROP).split()]
    return (ids + [0] * max_len)[:max_len]
