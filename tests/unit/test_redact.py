import pytest

from diagnose.collect.redact import redact_argv, redact_command_string, redact_text


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--api-key=abc123"], ["--api-key=***"]),
        (["--password", "hunter2", "--port", "80"], ["--password", "***", "--port", "80"]),
        (["TOKEN=xyz"], ["TOKEN=***"]),
        (["DB_PASSWORD=x"], ["DB_PASSWORD=***"]),
        (["--auth-token", "q"], ["--auth-token", "***"]),
        (["--client-secret=s"], ["--client-secret=***"]),
        (["postgres://user:pw@db:5432/x"], ["postgres://user:***@db:5432/x"]),
        (["Authorization: Bearer abcdefghijkl"], ["Authorization: Bearer ***"]),
        (["sk-abcdefghijklmnopqrstu"], ["***"]),
        (["hf_abcdefghijklmnopqrstuvwxyz"], ["***"]),
    ],
)
def test_secrets_are_redacted(argv, expected):
    assert redact_argv(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["python", "serve.py", "--tokenizer", "bert-base"],
        ["--max-tokens", "512"],
        ["--passes", "3"],
        ["-p", "8080"],
        ["https://example.com/model.onnx"],
    ],
)
def test_ordinary_arguments_are_kept(argv):
    assert redact_argv(argv) == argv


def test_string_forms():
    assert "hunter2" not in redact_command_string("serve --password hunter2 --x 1")
    assert redact_text("see https://a:b@h/") == "see https://a:***@h/"
