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


# -- issue 17, finding 5: each of these leaked to manifest.json, the reports and the terminal
#    on 8e0de8b ("S3CRETvalue" is the secret)
LEAKED_ON_8E0DE8B = {
    "assignment inside sh -c": ["sh", "-c", "cd x && OPENAI_API_KEY=S3CRETvalue python serve.py"],
    "header after an https: URL": ["sh", "-c", "curl https://x -H X-Api-Key: S3CRETvalue"],
    "--key S": ["serve", "--key", "S3CRETvalue"],
    "--key=S": ["serve", "--key=S3CRETvalue"],
    "-k S": ["openssl", "enc", "-k", "S3CRETvalue"],
    "--pw S": ["serve", "--pw", "S3CRETvalue"],
    "--githubtoken S": ["serve", "--githubtoken", "S3CRETvalue"],
    "--Authorization=S": ["serve", "--Authorization=S3CRETvalue"],
    "--bearer=S": ["serve", "--bearer=S3CRETvalue"],
    "Authorization: ApiKey S": ["curl", "-H", "Authorization: ApiKey S3CRETvalue"],
    "https://TOKEN@host": ["git", "clone", "https://S3CRETvalue@github.com/o/r"],
    ";jsessionid=S": ["fetch", "https://h/app;jsessionid=S3CRETvalue?x=1"],
    "libpq conninfo": ["psql", "host=db password=S3CRETvalue dbname=app"],
    "Azure AccountKey": [
        "--conn",
        "DefaultEndpointsProtocol=https;AccountName=a;AccountKey=S3CRETvalue;EndpointSuffix=x",
    ],
    "inline JSON": ["serve", "--config", '{"model": "m", "api_key": "S3CRETvalue"}'],
    "sk_live_ key": ["serve", "sk_live_S3CRETvalue1234"],
    "--api-key<TAB>S": ["sh", "-c", "serve --api-key\tS3CRETvalue"],
    "no-break space": ["serve", "--api-key\u00a0S3CRETvalue"],
    "--api-key -- S": ["serve", "--api-key", "--", "S3CRETvalue"],
}


# -- issue 40, finding 7: these leaked on 41b1513
LEAKED_ON_41B1513 = {
    "PEM private key": [
        "serve",
        "--tls",
        "-----BEGIN PRIVATE KEY-----\nS3CRETvalue\n-----END PRIVATE KEY-----",
    ],
    "RSA key, no END": ["serve", "-----BEGIN RSA PRIVATE KEY----- S3CRETvalue"],
    "OpenSSH key": [
        "sh",
        "-c",
        "echo '-----BEGIN OPENSSH PRIVATE KEY-----\nS3CRETvalue\n-----END OPENSSH PRIVATE KEY-----' > k",
    ],
    "PGP key block": [
        "x",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nS3CRETvalue\n-----END PGP PRIVATE KEY BLOCK-----",
    ],
    "SendGrid": ["mailer", "SG.S3CRETvalueAbCdEfGh.S3CRETvalueIjKlMnOpQr"],
    "Slack webhook": ["notify", "https://hooks.slack.com/services/T0/B0/S3CRETvalue"],
    "Discord webhook": ["notify", "--url=https://discord.com/api/webhooks/1234/S3CRETvalue"],
    "--host URL password": [
        "diagnose",
        "sweep",
        "1",
        "--host",
        "http://admin:S3CRETvalue@127.0.0.1:8082",
    ],
}
LEAKED = {**LEAKED_ON_8E0DE8B, **LEAKED_ON_41B1513}


@pytest.mark.parametrize("argv", LEAKED.values(), ids=LEAKED.keys())
def test_the_leaks_found_in_review_are_closed(argv):
    out = redact_argv(argv)
    assert len(out) == len(argv)
    assert not any("S3CRETvalue" in a for a in out), out
    assert redact_argv(out) == out  # stable
    assert "S3CRETvalue" not in redact_command_string(" ".join(argv))


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        # the rest of the string is kept as it was: only the value goes
        (
            ["sh", "-c", "cd x && OPENAI_API_KEY=S python serve.py --port 80"],
            ["sh", "-c", "cd x && OPENAI_API_KEY=*** python serve.py --port 80"],
        ),
        (["-H", "Authorization: Bearer abc"], ["-H", "Authorization: Bearer ***"]),
        (["Authorization:", "Bearer", "abc"], ["Authorization:", "Bearer", "***"]),
        (["sh", "-c", "export TOKEN='a b c'; run"], ["sh", "-c", "export TOKEN='***'; run"]),
        (["psql", "password = S dbname=x"], ["psql", "password = *** dbname=x"]),
        (["{'password': 'S', 'user': 'u'}"], ["{'password': '***', 'user': 'u'}"]),
        (["https://b/m.onnx?sv=2020&sig=S"], ["https://b/m.onnx?sv=2020&sig=***"]),
    ],
)
def test_redaction_keeps_the_shape(argv, expected):
    assert redact_argv(argv) == expected


@pytest.mark.parametrize(
    "argv",
    [
        ["curl", "-k", "https://example.com/x"],  # -k before a URL is curl's --insecure
        ["git", "clone", "ssh://git@github.com/o/r"],  # a login name, not a credential
        ["sh", "-c", "cd /srv && exec python serve.py --workers 4"],
        ["--key-file", "/etc/tls/server.key"],  # names a file, holds no secret
        ["--header", "Content-Type: application/json"],
        ["python", "-c", "import json; print(json.dumps({'model': 'm'}))"],
    ],
)
def test_ordinary_commands_are_kept(argv):
    assert redact_argv(argv) == argv
