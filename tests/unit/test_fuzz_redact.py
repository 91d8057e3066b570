"""Secrets in command lines (collect/redact.py), fuzzed: whatever the secret's value and
wherever it sits (an option, the argument after one, an environment-style assignment, a
URL's password or query string, a header), it never survives redaction; redaction keeps the
number of arguments, is stable when applied twice, and never raises on any text."""

from __future__ import annotations

import shlex

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from diagnose.collect.redact import PLAIN_USERS, REDACTED, redact_argv, redact_command_string
from tests.unit.fuzzing import fuzz

FUZZ = fuzz(300)

#: where a secret sits in a command line; {s} is the secret
PLACES = [
    ["--api-key={s}"],
    ["--api-key", "{s}"],
    ["--apiKey={s}"],
    ["--openaiApiKey", "{s}"],
    ["--password", "{s}"],
    ["--db-password={s}"],
    ["--password-file", "{s}"],
    ["--token={s}"],
    ["--hf-token", "{s}"],
    ["--client-secret", "{s}"],
    ["--cookie", "{s}"],
    ["TOKEN={s}"],
    ["HF_TOKEN={s}"],
    ["OPENAI_API_KEY={s}"],
    ["AWS_SECRET_ACCESS_KEY={s}"],
    ["PGPASSWORD={s}"],
    ["MYSQL_PWD={s}"],
    ["postgres://admin:{s}@db:5432/app"],
    ["--db-url=mysql://root:{s}@10.0.0.1/x"],
    ["redis://:{s}@cache:6379/0"],
    ["amqp://user:{s}@ss@broker/"],
    ["https://api.example.com/v1?api_key={s}&model=x"],
    ["https://blob.example.com/c/m.onnx?sv=2020&sig={s}"],
    ["--header", "X-Api-Key: {s}"],
    ["--header=Authorization: Bearer {s}"],
    ["-H", "Authorization: token {s}"],
    # issue 17: each leaked on 8e0de8b
    ["--key", "{s}"],
    ["--key={s}"],
    ["-k", "{s}"],
    ["--pw", "{s}"],
    ["--githubtoken", "{s}"],
    ["--Authorization={s}"],
    ["--bearer={s}"],
    ["-H", "Authorization: ApiKey {s}"],
    ["X-Api-Key:", "{s}"],
    ["https://{s}@github.com/o/r"],
    ["https://h/app;jsessionid={s}"],
    ["host=db password={s} dbname=app"],
    ["AccountName=a;AccountKey={s};EndpointSuffix=x"],
    ['{{"api_key": "{s}"}}'],
    ["{{'password': '{s}'}}"],
    ["--api-key", "--", "{s}"],
]
#: what secrets look like: long enough to be told from a flag value like "1"
secrets = st.text(
    st.sampled_from("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.~+/"),
    min_size=8,
    max_size=40,
).filter(lambda s: s.strip("-_.~+/") and not s.startswith("-"))


@FUZZ
@given(
    st.sampled_from(PLACES),
    secrets,
    st.lists(st.sampled_from(["serve.py", "-v", "--port", "8080"]), max_size=3),
)
def test_a_secret_never_survives_redaction(place, secret, around):
    assume(url_safe(place, secret, "python", *around))
    argv = ["python", *around, *(a.format(s=secret) for a in place), *around]
    out = redact_argv(argv)
    assert len(out) == len(argv)
    assert secret not in " ".join(out), out
    assert REDACTED in " ".join(out)
    assert secret not in redact_command_string(" ".join(argv))


def url_safe(place: list[str], secret: str, *context: str) -> bool:
    """A secret that can be told apart: not a word of the command around it, and in a URL's
    user part no '/' (it would end the host part: a path)."""
    if any(secret in text for text in [*place, *context]) or secret.lower() in PLAIN_USERS:
        return False  # (a login name such as git@ or ec2-user@ is kept: documented)
    return "://{s}@" not in "".join(place) or "/" not in secret


#: what separates words in a shell string: a tab and a no-break space too
SEPARATORS = [" ", "  ", "\t", "\u00a0", "\u2003"]


@FUZZ
@given(
    st.sampled_from(PLACES),
    secrets,
    st.sampled_from(SEPARATORS),
    st.sampled_from(["", "cd /srv && ", "set -e; ", "exec env X=1 "]),
    st.sampled_from(["", " --port 8080", " && echo done", "; sleep 1"]),
)
def test_a_secret_inside_a_shell_string_never_survives(place, secret, sep, before, after):
    # GIVEN the same places inside `sh -c "..."`, words separated by any whitespace
    assume(url_safe(place, secret, before, after, "python serve.py"))
    words = [a.format(s=secret) for a in place]
    script = before + "python serve.py" + sep + sep.join(shlex.quote(w) for w in words) + after
    argv = ["sh", "-c", script]
    # THEN the secret is gone and only the secret: the script around it is kept
    out = redact_argv(argv)
    assert len(out) == 3 and out[:2] == ["sh", "-c"]
    assert secret not in out[2], out
    assert out[2].startswith(before + "python serve.py")
    assert redact_argv(out) == out
    assert secret not in redact_command_string(script)


@FUZZ
@given(st.lists(st.text(max_size=40), max_size=8))
def test_redaction_of_any_text_keeps_arguments_and_is_stable(argv):
    out = redact_argv(argv)
    assert len(out) == len(argv)
    assert redact_argv(out) == out
    assert isinstance(redact_command_string(" ".join(argv)), str)


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "serve.py", "--tokenizer", "bert-base", "--max-tokens", "512"],
        ["--passes", "3", "--compass", "n", "--bypass-cache"],
        ["https://example.com/model.onnx?revision=main&page=2"],
        ["--header", "Content-Type: application/json"],
        ["uvicorn", "app:api", "--workers", "4"],
    ],
)
def test_ordinary_arguments_are_kept(argv):
    assert redact_argv(argv) == argv
