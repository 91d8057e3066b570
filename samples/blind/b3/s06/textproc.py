"""Text utilities."""
import html
import re
import unicodedata

from tokenizers import Tokenizer, normalizers, pre_tokenizers, processors
from tokenizers.models import WordPiece

BASE = ("the a an and or but to of in on for with at by from is are was were be been order delivery refund late "
        "broken item support account login error payment card shipping tracking invoice password reset email "
        "phone customer service product quality price discount return exchange warranty store online app "
        "update install crash slow fast great good bad terrible excellent love hate want need help please "
        "thanks today yesterday week month year time day number address name").split()

_url = re.compile(r"https?://\S+")
_mail = re.compile(r"\S+@\S+")
_rep = re.compile(r"(.)\1{2,}")
_space = re.compile(r"\s+")


def build_tokenizer():
    vocab = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3}
    for w in BASE:
        vocab.setdefault(w, len(vocab))
    for w in BASE:
        for i in range(1, len(w)):
            vocab.setdefault("##" + w[i:], len(vocab))
    for c in "abcdefghijklmnopqrstuvwxyz0123456789":
        vocab.setdefault(c, len(vocab))
        vocab.setdefault("##" + c, len(vocab))
    tok = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    tok.enable_truncation(64)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    return tok


def clean(text):
    text = html.unescape(text)
    text = _url.sub(" url ", text)
    text = _mail.sub(" email ", text)
    text = unicodedata.normalize("NFKC", text)
    out = []
    for ch in text:
        cat = unicodedata.category(ch)
        if cat.startswith("C"):
            continue
        out.append(" " if cat.startswith("P") or cat.startswith("S") else ch)
    text = _rep.sub(r"\1\1", "".join(out))
    return _space.sub(" ", text).strip()
