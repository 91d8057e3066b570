"""Redacting secrets from command lines before they are written anywhere.

Matches options whose name says secret (``--api-key=X``, ``--password X``, ``-p`` is
left alone), ``NAME=VALUE`` assignments whose name says secret (``TOKEN=...``), URLs with
credentials (``https://user:pass@host``), bearer tokens and well-known key shapes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "***"

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key"  # noqa: S105
    r"|auth(?:[-_]?token)?|credentials?|session[-_]?key|client[-_]?secret|signature|sas|dsn"
)
_SECRET_NAME = re.compile(
    rf"(?i)(?:^|[-_.])(?:{_SECRET_WORDS})(?:$|[-_.])|(?i:^(?:{_SECRET_WORDS})$)"
)
_OPTION = re.compile(r"^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)(=)(.*)$", re.S)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)(=)(.*)$", re.S)
_URL_CREDS = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s]*):(?P<pw>[^/@\s]+)@"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+[A-Za-z0-9._~+/=-]{8,}")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*)"
)


def is_secret_name(name: str) -> bool:
    bare = name.lstrip("-")
    return bool(_SECRET_NAME.search(bare))


def redact_text(text: str) -> str:
    """Redact credentials inside one string (URLs, bearer tokens, known key shapes)."""
    text = _URL_CREDS.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{REDACTED}@", text)
    text = _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line given as a list of arguments."""
    out: list[str] = []
    redact_next = False
    for arg in argv:
        if redact_next:
            out.append(REDACTED)
            redact_next = False
            continue
        m = _OPTION.match(arg)
        if m and is_secret_name(m.group(1)):
            out.append(f"{m.group(1)}={REDACTED}")
            continue
        if arg.startswith("-") and not m and is_secret_name(arg) and len(arg) > 2:
            out.append(arg)
            redact_next = True
            continue
        m = _ASSIGN.match(arg)
        if m and is_secret_name(m.group(1)):
            out.append(f"{m.group(1)}={REDACTED}")
            continue
        out.append(redact_text(arg))
    return out


def redact_command_string(cmd: str) -> str:
    """Redact a command line given as one string (split on whitespace, then rejoined)."""
    parts = cmd.split(" ")
    return " ".join(redact_argv(parts))
