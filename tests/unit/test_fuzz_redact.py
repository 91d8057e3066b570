"""Secrets in command lines (collect/redact.py), fuzzed: whatever the secret's value and
wherever it sits (an option, the argument after one, an environment-style assignment, a
URL's password or query string, a header), it never survives redaction; redaction keeps the
number of arguments, is stable when applied twice, and never raises on any text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from diagnose.collect.redact import REDACTED, redact_argv, redact_command_string
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
    argv = ["python", *around, *(a.format(s=secret) for a in place), *around]
    out = redact_argv(argv)
    assert len(out) == len(argv)
    assert secret not in " ".join(out), out
    assert REDACTED in " ".join(out)
    assert secret not in redact_command_string(" ".join(argv))


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
