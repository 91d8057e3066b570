"""Counts in words: "1 application thread", "3 application threads", for every message
diagnose prints, whether built in Python or from a rule file's ``{metric:count NOUN}``."""

from __future__ import annotations

import re

_SIBILANT = re.compile(r"(s|x|z|ch|sh)$")
_CONSONANT_Y = re.compile(r"[^aeiou]y$")


def plural(noun: str) -> str:
    """The plural of ``noun`` (its last word): thread -> threads, process -> processes,
    entry -> entries; enough for the nouns diagnose counts."""
    if _SIBILANT.search(noun):
        return noun + "es"
    if _CONSONANT_Y.search(noun):
        return noun[:-1] + "ies"
    return noun + "s"


def count(n: object, noun: str) -> str:
    """``n`` and ``noun``, singular only when ``n`` shows as exactly "1": count(1,
    "core") -> "1 core", count(2, "application thread") -> "2 application threads", and
    a number formatted already agrees as shown (count("1.5", "core") -> "1.5 cores")."""
    text = str(n)
    return f"{text} {noun if text == '1' else plural(noun)}"
