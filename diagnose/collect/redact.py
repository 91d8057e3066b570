"""Redacting secrets from command lines before they are written anywhere.

Command lines reach a bundle as argument lists (the target's ``/proc/PID/cmdline``,
diagnose's own ``argv``, ``diagnose run``'s command), and any argument may itself hold a
command line (``sh -c "cd x && OPENAI_API_KEY=S python serve.py --key S"``), a connection
string (``host=db password=S``, ``AccountKey=S;``), a header (``X-Api-Key: S``), a URL
(``https://user:S@host``, ``?api_key=S``, ``;jsessionid=S``) or JSON (``{"api_key": "S"}``).

Redaction works at two levels, the same for a list of arguments and for a shell string:

1. Text patterns, anywhere in a string: ``NAME=VALUE`` and ``"NAME": "VALUE"`` pairs
   whose name says secret, ``Name: VALUE`` headers, URL credentials and secret query
   parameters, ``Bearer``/``Basic``/``ApiKey`` schemes, well-known key shapes (``sk-``,
   ``sk_live_``, ``ghp_``, ``AKIA``, JWTs ...).
2. Tokens: an argument that holds whitespace (any Unicode space, a tab, a no-break space)
   is split like a shell would (quotes and backslashes honoured, :func:`shell_tokens`),
   and each token list is read like an argv: an option whose name says secret
   (``--api-key``, ``--key``, ``--pw``, ``-k``, ``--githubtoken``) hides the argument
   after it (past a ``--``), a secret header name ending in ``:`` hides the value after it
   (keeping a scheme word such as ``Bearer``), ``NAME=VALUE`` and ``--name=VALUE`` hide
   the value. Redacted tokens are put back in place, the rest of the string unchanged.

A name "says secret" (:func:`is_secret_name`) when one of its parts (split at ``-``,
``_``, ``.`` and camelCase) is a secret word (password, token, secret, key as the last
part, ...) or it ends in one glued (``PGPASSWORD``, ``githubtoken``). What cannot be caught
is listed in docs/reliability.md (a secret given as a bare positional argument, or after an
option whose name says nothing, among others).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence

REDACTED = "***"

#: a part of a name that makes it secret wherever it is (``--db-password``, ``HF_TOKEN``)
_SECRET_PARTS = frozenset(
    [
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "secret",
        "secrets",
        "token",
        "apikey",
        "authorization",
        "bearer",
        "credential",
        "credentials",
        "cookie",
        "cookies",
        "signature",
        "dsn",
        "sas",
        "sessionid",
        "jsessionid",
        "phpsessid",
        "privatekey",
        "accesskey",
        "secretkey",
        "accountkey",
        "clientsecret",
        "authtoken",
        "refreshtoken",
        "connectionstring",
        "connstr",
        "otp",
    ]
)
#: parts that make a name secret only as its last part: ``--key``, ``--api-key``, ``--pw``
#: (not ``--key-file``, ``--pass-through``)
_LAST_PARTS = frozenset(["key", "pass", "pw", "auth", "sig", "session", "sid"])
#: glued to a prefix: PGPASSWORD, MYSECRET, githubtoken, OPENAIAPIKEY
_GLUED = re.compile(
    r"(?:password|passwd|secret|token|apikey|accesskey|secretkey|privatekey|accountkey"
    r"|sessionid|clientsecret)$|password|secret"
)
#: short options that take a secret (``openssl enc -k KEY``); ``-p`` is a port too often
_SHORT_SECRET_OPTIONS = frozenset({"-k"})
#: authentication schemes kept visible before a redacted credential
_SCHEMES = frozenset(
    [
        "bearer",
        "basic",
        "token",
        "apikey",
        "api-key",
        "digest",
        "negotiate",
        "ntlm",
        "hmac",
        "key",
        "sharedkey",
        "dpop",
        "mac",
        "oauth",
        "aws4-hmac-sha256",
        "sharedaccesssignature",
    ]
)
#: headers whose value may start with such a scheme
_AUTH_HEADERS = frozenset({"authorization", "proxy-authorization"})
#: usernames of URLs that are not credentials themselves (``ssh://git@host``)
PLAIN_USERS = frozenset(
    [
        "git",
        "hg",
        "svn",
        "postgres",
        "root",
        "admin",
        "user",
        "ubuntu",
        "ec2-user",
        "anonymous",
        "ftp",
        "guest",
        "oauth2",
    ]
)
#: query parameters that carry a credential under a short name (``?sig=``, ``&key=``)
_QUERY_ONLY = frozenset({"sig", "key", "code", "access_token"})

_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_PARTS = re.compile(r"[-_.\s]+")

_SCHEME_RE = "|".join(re.escape(s) for s in sorted(_SCHEMES, key=len, reverse=True))
_JSON_PAIR = re.compile(
    r"""(?P<q>["'])(?P<name>[^"'\\\s]{1,80})(?P=q)(?P<sep>\s*:\s*)"""
    r"""(?:(?P<vq>["'])(?P<qvalue>(?:\\.|(?!(?P=vq)).)*)(?P=vq)|(?P<bare>[^,}\]\s"']+))"""
)
_PAIR = re.compile(  # NAME=VALUE inside any text; VALUE ends at ; & whitespace or a quote
    r"""(?P<pre>^|[^\w.\-])(?P<name>[A-Za-z_][\w.\-]{0,80})(?P<sep>\s*=\s*)"""
    r"""(?P<value>"[^"]*"|'[^']*'|[^\s;&"'<>]*)"""
)
_HEADER = re.compile(  # Name: [Scheme] VALUE
    rf"(?P<pre>^|[^\w\-])(?P<name>[A-Za-z][\w\-]{{0,80}})(?P<sep>\s*:\s*)"
    rf"(?:(?P<scheme>(?i:{_SCHEME_RE}))\s+)?(?P<value>[^\s,;]+)"
)
_URL_USERINFO = re.compile(
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<userinfo>[^/?#@\s]+)@(?=[^@/\s]*(?:[/?#\s]|$))"
)
_URL_USERINFO_GREEDY = re.compile(  # a password holding '@' or '/': up to the host's '@'
    r"(?P<scheme>[A-Za-z][A-Za-z0-9+.\-]*://)(?P<user>[^/@:\s]*):(?P<pw>\S+?)@"
    r"(?=[^@/\s]*(?:[/?#\s]|$))"
)
_AUTH_SCHEME = re.compile(r"(?i)\b(?P<scheme>bearer)\s+(?P<value>\S+)")
_AUTH_SCHEME_LONG = re.compile(r"(?i)\b(?P<scheme>basic|token|apikey|api-key)\s+(?P<value>\S{8,})")
_KEY_SHAPES = re.compile(
    r"\b(?:sk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}|(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{8,}"
    r"|gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_\-]{16,}"
    r"|xox[abpr]-[A-Za-z0-9\-]{10,}|xapp-[A-Za-z0-9\-]{10,}|AKIA[0-9A-Z]{16}|ASIA[0-9A-Z]{16}"
    r"|AIza[0-9A-Za-z_\-]{30,}|ya29\.[0-9A-Za-z_\-]{20,}|hf_[A-Za-z0-9]{20,}"
    r"|npm_[A-Za-z0-9]{30,}|pypi-[A-Za-z0-9_\-]{40,}"
    r"|SG\.[A-Za-z0-9_\-]{16,}\.[A-Za-z0-9_\-]{16,}"
    r"|eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]*)"
)
#: a private key block (PEM, OpenSSH, PGP): its body, up to its END line or the text's end
_KEY_BLOCK = re.compile(
    r"(?P<begin>-----BEGIN (?P<label>(?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----)"
    r".*?(?:(?P<end>-----END (?P=label)-----)|\Z)",
    re.S,
)
#: webhook URLs whose path is the credential (Slack, Discord)
_WEBHOOK = re.compile(
    r"(?P<base>https?://(?:hooks\.slack\.com/(?:services|workflows|triggers)"
    r"|(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks))/(?P<rest>[^\s\"'<>]+)"
)
_OPTION = re.compile(r"^(?P<name>-{1,2}[A-Za-z0-9][\w.\-]*)(?P<sep>=)(?P<value>.*)$", re.S)
_ASSIGN = re.compile(r"^(?P<name>[A-Za-z_][\w.\-]*)(?P<sep>=)(?P<value>.*)$", re.S)
_HEADER_NAME = re.compile(r"^[A-Za-z][\w\-]*:$")
_HEADER_GLUED = re.compile(r"^(?P<name>[A-Za-z][\w\-]*):(?P<value>[^/].*)$", re.S)

_MAX_DEPTH = 4  # shell strings inside shell strings, at most this deep


def is_secret_name(name: str) -> bool:
    """Does this option, variable, header or parameter name say it holds a secret?"""
    bare = _CAMEL.sub("-", name.strip().lstrip("-").rstrip(":")).lower()
    if not bare:
        return False
    parts = [p for p in _PARTS.split(bare) if p]
    if not parts:
        return False
    if any(p in _SECRET_PARTS for p in parts) or parts[-1] in _LAST_PARTS:
        return True
    glued = "".join(parts)
    return bool(_GLUED.search(glued)) or glued in _SECRET_PARTS


def _done(value: str) -> bool:
    """Empty, or redacted already (redaction is stable when applied twice)."""
    return value.strip("\"';&") in ("", REDACTED)


def _quoted(value: str) -> str:
    """A redacted value, keeping the quotes it had."""
    if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
        return f"{value[0]}{REDACTED}{value[0]}"
    return REDACTED


def redact_text(text: str) -> str:
    """Redact credentials anywhere inside one string (the text patterns of the module
    docstring); what is not a credential is left exactly as it was."""

    def json_pair(m: re.Match[str]) -> str:
        if not is_secret_name(m.group("name")):
            return m.group(0)
        head = f"{m.group('q')}{m.group('name')}{m.group('q')}{m.group('sep')}"
        if m.group("vq"):
            return f"{head}{m.group('vq')}{REDACTED}{m.group('vq')}"
        return head + REDACTED

    def pair(m: re.Match[str]) -> str:
        name, pre = m.group("name"), m.group("pre")
        secret = is_secret_name(name) or (pre in ("?", "&", ";") and name.lower() in _QUERY_ONLY)
        if not secret or _done(m.group("value")):
            return m.group(0)
        return f"{pre}{name}{m.group('sep')}{_quoted(m.group('value'))}"

    def header(m: re.Match[str]) -> str:
        if not is_secret_name(m.group("name")) or m.group("value") == REDACTED:
            return m.group(0)
        scheme = ""
        if m.group("scheme") and m.group("name").lower() in _AUTH_HEADERS:
            scheme = f"{m.group('scheme')} "
        return f"{m.group('pre')}{m.group('name')}{m.group('sep')}{scheme}{REDACTED}"

    def userinfo(m: re.Match[str]) -> str:
        info = m.group("userinfo")
        user, colon, _pw = info.partition(":")
        if colon:
            return f"{m.group('scheme')}{user}:{REDACTED}@"
        if info.lower() in PLAIN_USERS or info == REDACTED:
            return m.group(0)
        return f"{m.group('scheme')}{REDACTED}@"

    if "-----BEGIN " in text:
        text = _KEY_BLOCK.sub(lambda m: f"{m.group('begin')}{REDACTED}{m.group('end') or ''}", text)
    text = _WEBHOOK.sub(lambda m: f"{m.group('base')}/{REDACTED}", text)
    text = _JSON_PAIR.sub(json_pair, text)
    text = _URL_USERINFO_GREEDY.sub(
        lambda m: f"{m.group('scheme')}{m.group('user')}:{REDACTED}@", text
    )
    text = _URL_USERINFO.sub(userinfo, text)
    if "=" in text:
        text = _PAIR.sub(pair, text)
    if ":" in text:
        text = _HEADER.sub(header, text)
    text = _AUTH_SCHEME.sub(lambda m: f"{m.group('scheme')} {REDACTED}", text)
    text = _AUTH_SCHEME_LONG.sub(lambda m: f"{m.group('scheme')} {REDACTED}", text)
    return _KEY_SHAPES.sub(REDACTED, text)


def shell_tokens(text: str) -> list[tuple[int, int, str]]:
    """Split ``text`` as a POSIX shell splits words: (start, end, word without its quotes).
    Any Unicode whitespace separates (a tab, a no-break space); quotes and backslashes are
    honoured; an unclosed quote runs to the end. Never raises."""
    out: list[tuple[int, int, str]] = []
    i, n = 0, len(text)
    while i < n:
        if text[i].isspace():
            i += 1
            continue
        start, buf = i, []
        while i < n and not text[i].isspace():
            c = text[i]
            if c == "\\" and i + 1 < n:
                buf.append(text[i + 1])
                i += 2
            elif c == "'":
                j = text.find("'", i + 1)
                j = n if j < 0 else j
                buf.append(text[i + 1 : j])
                i = j + 1
            elif c == '"':
                j = i + 1
                while j < n and text[j] != '"':
                    if text[j] == "\\" and j + 1 < n and text[j + 1] in '"\\$`':
                        buf.append(text[j + 1])
                        j += 2
                        continue
                    buf.append(text[j])
                    j += 1
                i = j + 1
            else:
                buf.append(c)
                i += 1
        out.append((start, min(i, n), "".join(buf)))
    return out


def _redact_shell(text: str, depth: int) -> str:
    """A string holding several words: text patterns, then the words read as an argv and
    put back where they were (requoted if they were quoted)."""
    text = redact_text(text)
    tokens = shell_tokens(text)
    words = [w for _s, _e, w in tokens]
    redacted = _redact_tokens(words, depth + 1)
    pieces: list[str] = []
    last = 0
    for (start, end, word), new in zip(tokens, redacted, strict=True):
        if new == word:
            continue
        raw = text[start:end]
        pieces.append(text[last:start])
        pieces.append(new if raw == word else shlex.quote(new))
        last = end
    pieces.append(text[last:])
    return "".join(pieces)


def _redact_one(arg: str, depth: int) -> str:
    """One token (or argument) on its own, without what comes before or after it."""
    if depth < _MAX_DEPTH and any(c.isspace() for c in arg.strip()):
        return _redact_shell(arg, depth)
    m = _OPTION.match(arg)
    if m:
        if is_secret_name(m.group("name")):
            return (
                arg if _done(m.group("value")) else f"{m.group('name')}={_quoted(m.group('value'))}"
            )
        return f"{m.group('name')}={_redact_one(m.group('value'), depth)}"
    m = _ASSIGN.match(arg)
    if m and is_secret_name(m.group("name")) and not _done(m.group("value")):
        return f"{m.group('name')}={_quoted(m.group('value'))}"
    m = _HEADER_GLUED.match(arg)
    if m and is_secret_name(m.group("name")) and not _done(m.group("value")):
        return f"{m.group('name')}:{REDACTED}"
    return redact_text(arg)


def _takes_secret(arg: str) -> bool:
    """An option or header name whose value is the next argument."""
    if arg in _SHORT_SECRET_OPTIONS:
        return True
    option_like = arg.startswith("-") and not any(c.isspace() for c in arg)  # not a PEM block
    if option_like and "=" not in arg and len(arg) > 2 and is_secret_name(arg):
        return arg.lstrip("-") != ""
    return bool(_HEADER_NAME.match(arg)) and is_secret_name(arg[:-1])


def _redact_tokens(args: Sequence[str], depth: int) -> list[str]:
    """Arguments (or a shell string's words) read as an argv."""
    out: list[str] = []
    expect = ""  # the next argument is a secret value: of an "option", "short", "header"
    scheme_ok = False  # an Authorization header: a scheme word before the value is kept
    for arg in args:
        if expect == "short" and "://" in arg:  # curl -k URL: -k takes no value there
            expect = ""
        if expect:
            if arg == "--" and expect != "header":  # --api-key -- S
                out.append(arg)
                continue
            if scheme_ok and arg.lower() in _SCHEMES:  # Authorization: Bearer S
                out.append(arg)
                scheme_ok = False
                continue
            out.append(REDACTED if arg else arg)
            expect, scheme_ok = "", False
            continue
        if _takes_secret(arg):
            out.append(arg)
            if arg.endswith(":"):
                expect, scheme_ok = "header", arg[:-1].lower() in _AUTH_HEADERS
            else:
                expect = "short" if arg in _SHORT_SECRET_OPTIONS else "option"
            continue
        if arg == "=" and out and is_secret_name(out[-1]):  # password = S (libpq)
            out.append(arg)
            expect = "option"
            continue
        out.append(_redact_one(arg, depth))
    return out


def redact_argv(argv: Sequence[str]) -> list[str]:
    """Redact a command line given as a list of arguments (same length back)."""
    return _redact_tokens([str(a) for a in argv], 0)


def redact_command_string(cmd: str) -> str:
    """Redact a command line given as one string (a shell command)."""
    return _redact_shell(cmd, 0)
