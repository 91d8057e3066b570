"""Redacting secrets from command lines before they are written anywhere.

Matches options whose name says secret (``--api-key=X``, ``--password X``, ``--openaiApiKey``;
``-p`` is left alone), ``NAME=VALUE`` assignments whose name says secret (``TOKEN=...``,
``PGPASSWORD=...``, ``MYSQL_PWD=...``), URLs with credentials (``https://user:pass@host``)
or secret query parameters (``?api_key=...``, ``&sig=...``), headers whose name says secret
(``X-Api-Key: ...``), bearer tokens and well-known key shapes.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

REDACTED = "***"

_SECRET_WORDS = (
    r"pass(?:word|wd|phrase)?|secret|token|api[-_]?key|apikey|access[-_]?key|private[-_]?key"  # noqa: S105
    r"|auth(?:[-_]?token)?|credentials?|session[-_]?key|client[-_]?secret|signature|sas|dsn"
    r"|pwd|cookie"
)
_SECRET_NAME = re.compile(
    rf"(?i)(?:^|[-_.])(?:{_SECRET_WORDS})(?:$|[-_.])|(?i:^(?:{_SECRET_WORDS})$)"
    r"|(?i:pass(?:word|wd)|secret)"  # glued to a prefix too: PGPASSWORD, MYSECRET
)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")  # openaiApiKey -> openai-Api-Key
_QUERY_SECRET = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&#\s]+)=(?P<value>[^&#\s]+)")
_HEADER = re.compile(r"(?P<name>[A-Za-z][A-Za-z0-9_-]*)(?P<sep>\s*:\s*)(?P<value>\S.*)$", re.S)
_OPTION = re.compile(r"^(-{1,2}[A-Za-z0-9][A-Za-z0-9_.-]*)(=)(.*)$", re.S)
_ASSIGN = re.compile(r"^([A-Za-z_][A-Za-z0-9_.-]*)(=)(.*)$", re.S)
_URL_CREDS = re.compile(  # the password runs to the '@' before the host: p@ss and p/ss too
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<user>[^/@:\s]*):(?P<pw>\S+?)@"
    r"(?=[^@/\s]*(?:[/?#\s]|$))"
)
_BEARER = re.compile(r"(?i)\b(bearer|basic|token)\s+\S{8,}")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-[A-Za-z0-9_-]{16,}|ghp_[A-Za-z0-9]{20,}|xox[abpr]-[A-Za-z0-9-]{10,}"
    r"|AKIA[0-9A-Z]{16}|hf_[A-Za-z0-9]{20,}|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]*)"
)


def is_secret_name(name: str) -> bool:
    bare = _CAMEL.sub("-", name.lstrip("-"))
    return bool(_SECRET_NAME.search(bare))


def _query_param(m: re.Match[str]) -> str:
    name = m.group("name")
    if is_secret_name(name) or name.lower() in ("sig", "key", "code"):
        return f"{m.group('sep')}{name}={REDACTED}"
    return m.group(0)


def redact_text(text: str) -> str:
    """Redact credentials inside one string (URLs, query parameters, secret headers, bearer
    tokens, known key shapes)."""
    text = _URL_CREDS.sub(lambda m: f"{m.group('scheme')}{m.group('user')}:{REDACTED}@", text)
    if "=" in text and ("?" in text or "&" in text):
        text = _QUERY_SECRET.sub(_query_param, text)
    m = _HEADER.search(text)
    if m and is_secret_name(m.group("name")):
        text = text[: m.start("value")] + REDACTED
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
        if arg.endswith(":") and is_secret_name(arg[:-1]):  # a header split: "X-Api-Key:" VALUE
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
    return _BEARER.sub(lambda m: f"{m.group(1)} {REDACTED}", " ".join(redact_argv(parts)))
