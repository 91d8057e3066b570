"""What the zoo's services share: settings from the environment, made-up data, tiny models.

Nothing here is downloaded: models are built from small configs with seeded random weights,
the WordPiece vocabulary is made up, images and texts are generated. Each service's own
request path (``app.py`` in its directory) is ordinary user code; this module only builds
what a real service would load from disk at start-up.
"""

from __future__ import annotations

import json
import os
import random


def setting(name: str, default: str) -> str:
    """A service setting from the environment (how these services are configured)."""
    return os.environ.get(name, default)


def setting_int(name: str, default: int) -> int:
    return int(os.environ.get(name, str(default)))


SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "an", "el", "or", "ul", "is"]
ACCENTED = ["café", "naïve", "résumé", "Zürich", "São", "façade", "coöperate", "Ångström"]


def made_up_words(n: int = 3000, seed: int = 0) -> list[str]:
    rng = random.Random(seed)
    words: list[str] = []
    seen: set[str] = set()
    while len(words) < n:
        w = "".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 4)))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def messy_text(n_words: int = 300, seed: int = 0) -> str:
    """User-submitted text as it arrives: HTML entities, markup, accents, odd spacing."""
    rng = random.Random(seed)
    words = made_up_words()
    out = []
    for i in range(n_words):
        w = rng.choice(words)
        r = rng.random()
        if r < 0.05:
            w = rng.choice(ACCENTED)
        elif r < 0.1:
            w = w.upper()
        elif r < 0.13:
            w = f"<b>{w}</b>"
        elif r < 0.16:
            w = f"{w}&amp;{rng.choice(words)}"
        elif r < 0.18:
            w = f"&quot;{w}&quot;"
        elif r < 0.2:
            w = f"http://x.example/{w}?id={i}"
        out.append(w)
        if i % 17 == 16:
            out.append(rng.choice([".", "!", "?", ",", " -- "]))
    return "  ".join(out)


def wordpiece_vocab(words: list[str] | None = None) -> dict[str, int]:
    """A made-up WordPiece vocabulary: special tokens, whole words, '##' continuations."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])}
    for w in words or made_up_words(2000):
        vocab.setdefault(w, len(vocab))
    for s in SYLLABLES:
        vocab.setdefault(s, len(vocab))
        vocab.setdefault("##" + s, len(vocab))
    for c in "abcdefghijklmnopqrstuvwxyz0123456789.,!?-&;:/\"'<>=":
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    return vocab


def wordpiece_tokenizer(max_len: int = 128):
    """A Hugging Face ``tokenizers`` WordPiece tokenizer over the made-up vocabulary."""
    from tokenizers import Tokenizer, normalizers, pre_tokenizers
    from tokenizers.models import WordPiece

    vocab = wordpiece_vocab()
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.enable_truncation(max_length=max_len)
    tok.enable_padding(length=max_len, pad_id=0, pad_token="[PAD]")
    return tok, len(vocab)


def tiny_bert(layers: int = 2, hidden: int = 128, vocab_size: int = 3000, seed: int = 0):
    """A transformers BertModel from a small config, random weights, in eval mode."""
    import torch
    from transformers import BertConfig, BertModel

    torch.manual_seed(seed)
    cfg = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden,
        num_hidden_layers=layers,
        num_attention_heads=max(1, hidden // 64),
        intermediate_size=hidden * 4,
        max_position_embeddings=512,
    )
    return BertModel(cfg).eval()


def jpeg_bytes(size: int = 512, seed: int = 0, quality: int = 90) -> bytes:
    """A photo-like JPEG (smooth gradients plus noise), as a client would upload it."""
    import io

    import numpy as np
    from PIL import Image

    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:size, 0:size]
    base = np.stack([x * 255 / size, y * 255 / size, (x + y) * 127 / size], axis=-1)
    img = np.clip(base + rng.normal(0, 25, base.shape), 0, 255).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(img).save(buf, format="JPEG", quality=quality)
    return buf.getvalue()


def payload(spec: str) -> tuple[bytes, str]:
    """The request body a load generator sends: ``text:N`` (JSON with N words of messy
    text), ``jpeg:SIZE`` (an image upload), ``json:{...}`` (that document)."""
    kind, _, arg = spec.partition(":")
    if kind == "text":
        return json.dumps({"text": messy_text(int(arg or 300))}).encode(), "application/json"
    if kind == "jpeg":
        return jpeg_bytes(int(arg or 512)), "image/jpeg"
    if kind == "json":
        return (arg or "{}").encode(), "application/json"
    raise ValueError(f"unknown payload {spec!r}")


class NumpyModel:
    """A small dense network in NumPy: an embedding bag, then ``layers`` GEMMs with ReLU.

    NumPy releases the GIL inside each matmul (OpenBLAS), as real model runtimes do; the
    OpenBLAS pool size comes from OPENBLAS_NUM_THREADS, read once at import.
    """

    def __init__(self, width: int = 256, layers: int = 2, batch: int = 1, vocab: int = 3100):
        import numpy as np

        rng = np.random.default_rng(0)
        self.embed = rng.standard_normal((vocab, width)).astype(np.float32)
        self.weights = [
            (rng.standard_normal((width, width)) / width**0.5).astype(np.float32)
            for _ in range(layers)
        ]
        self.batch = batch

    def __call__(self, ids: list[int]) -> float:
        import numpy as np

        x = self.embed[np.asarray(ids, dtype=np.int64) % len(self.embed)]
        x = np.repeat(x.mean(axis=0, keepdims=True), self.batch, axis=0)
        for w in self.weights:
            x = np.maximum(x @ w, 0)
        return float(x.sum())
