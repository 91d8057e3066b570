"""Secrets never reach a bundle or a report. A real service is started with API keys,
passwords, tokens and credentials in its command line and its environment, captured with
``diagnose attach`` and with ``diagnose run``, and every byte diagnose wrote (each bundle
file, each report, what it printed) is searched for them. Only allow-listed environment
variables are recorded, and every file and directory is readable by its owner only, even
under a permissive umask."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from tests.e2e.cli import diagnose_argv
from tests.e2e.safety import started

SERVICE = """
import sys, threading, time
def handle():
    while True:
        sum(i * i for i in range(2000))
threading.Thread(target=handle, name="handler", daemon=True).start()
print("ready", flush=True)
time.sleep(float(sys.argv[1]))
"""

SECRETS = {
    "argv api key": "sk-live-4fj29dk3LQp0zzA8",
    "argv password": "hunter2-Correct-Horse",
    "argv token": "tok_9f8e7d6c5b4a3928",
    "argv url password": "pg-S3cr3t-Pw",
    "argv query key": "q-key-7a6b5c4d3e",
    "argv header": "hdr-X9y8Z7w6V5",
    "argv pem key": "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC",
    "argv openssh key": "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    "argv sendgrid": "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",
    "argv slack webhook": "T01ABCDEF/B02GHIJKL/sLaCkWeBhOoKsEcReT24",
    "argv discord webhook": "987654321098765432/dIsCoRdWeBhOoKtOkEn-_42",
    "env openai": "sk-proj-ENVabcdefghijklmnop",
    "env aws": "AWSenvSECRETkey1234567890",
    "env database url": "db-env-pw-0987",
    "env hf": "hf_ENVtokenABCDEFGHIJKLMNOP",
    "env plain": "plain-env-value-42",  # a variable whose name says nothing
}


def service_argv(seconds: float) -> list[str]:
    s = SECRETS
    return [
        sys.executable, "-c", SERVICE, str(seconds),
        f"--api-key={s['argv api key']}",
        "--password", s["argv password"],
        f"AUTH_TOKEN={s['argv token']}",
        f"--db=postgres://svc:{s['argv url password']}@db.internal:5432/app",
        f"--model-url=https://models.internal/m.onnx?api_key={s['argv query key']}",
        "--header", f"X-Api-Key: {s['argv header']}",
        "--tls", f"-----BEGIN PRIVATE KEY-----\n{s['argv pem key']}\n-----END PRIVATE KEY-----\n",
        "--ssh", f"-----BEGIN OPENSSH PRIVATE KEY-----\n{s['argv openssh key']}\n"
        "-----END OPENSSH PRIVATE KEY-----",
        "--mail", s["argv sendgrid"],
        "--alerts", f"https://hooks.slack.com/services/{s['argv slack webhook']}",
        "--alerts", f"https://discord.com/api/webhooks/{s['argv discord webhook']}",
        "--workers", "2",
    ]  # fmt: skip


def service_env() -> dict[str, str]:
    s = SECRETS
    return {
        **os.environ,
        "OPENAI_API_KEY": s["env openai"],
        "AWS_SECRET_ACCESS_KEY": s["env aws"],
        "DATABASE_URL": f"postgres://u:{s['env database url']}@h/db",
        "HF_TOKEN": s["env hf"],
        "SOME_SETTING": s["env plain"],
        "OMP_NUM_THREADS": "3",  # allow-listed: recorded
    }


def _umask_000() -> None:
    os.umask(0)


def run_diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    """diagnose under umask 000, so that private files are private by diagnose's doing."""
    return subprocess.run(
        diagnose_argv(*args),
        capture_output=True,
        text=True,
        timeout=300,
        env=service_env(),  # diagnose run hands its environment to the command
        preexec_fn=_umask_000,
        check=False,
    )


def assert_no_secret(out: Path, printed: str) -> None:
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10  # the search covers a whole bundle with its reports
    for what, secret in SECRETS.items():
        needle = secret.encode()
        for p in files:
            assert needle not in p.read_bytes(), f"{what} found in {p.relative_to(out)}"
        assert secret not in printed, f"{what} printed"


def assert_private(out: Path) -> None:
    assert stat.S_IMODE(out.stat().st_mode) == 0o700
    for p in out.rglob("*"):
        mode = stat.S_IMODE(p.lstat().st_mode)
        assert mode == (0o700 if p.is_dir() else 0o600), (p, oct(mode))


def assert_allow_list(out: Path) -> None:
    system = json.loads((out / "system.json").read_text())
    assert system["env"] == {"OMP_NUM_THREADS": "3"}
    cmdline = json.loads((out / "manifest.json").read_text())["target"]["cmdline"]
    assert "--password" in cmdline and "--workers" in cmdline  # redacted, not dropped


@pytest.fixture(scope="module")
def attached(tmp_path_factory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("secrets") / "bundle"
    # started() passes its own environment: use a shell-free env wrapper instead
    argv = ["env", *(f"{k}={v}" for k, v in service_env().items() if k not in os.environ)]
    with started([*argv, *service_argv(120)]) as proc:
        res = run_diagnose("attach", str(proc.pid), "-d", "3", "-o", str(out), "--no-follow")
    assert res.returncode == 0, res.stderr
    return out, res.stdout + res.stderr


def test_attach_writes_no_secret_anywhere(attached):
    out, printed = attached
    assert_no_secret(out, printed)
    assert_allow_list(out)


def test_attach_bundle_is_private_under_a_permissive_umask(attached):
    assert_private(attached[0])


def test_run_writes_no_secret_anywhere(tmp_path):
    # diagnose run: the command line is diagnose's own argv too (capture.command, run.argv)
    out = tmp_path / "bundle"
    res = run_diagnose(
        "run", "-d", "3", "--warmup", "1", "-o", str(out), "--", *service_argv(30)
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    manifest = json.loads((out / "manifest.json").read_text())
    assert "--password" in manifest["capture"]["run"]["argv"]
    # the command's own output passes through; diagnose adds no secret to it
    printed = (res.stdout + res.stderr).replace("ready\n", "")
    assert_no_secret(out, printed)
    assert_allow_list(out)
    assert_private(out)


#: issue 17: secrets inside a shell command and in forms that leaked on 8e0de8b
SHELL_SECRETS = {
    "sh -c assignment": "sk-shellassign-9Qw8Er7Ty6",
    "--key": "key-value-5Rt4Yu3Io2",
    "-k": "short-k-value-8Hj7Kl6",
    "--pw": "pw-value-1Zx2Cv3Bn4",
    "--githubtoken": "ghtok-value-6Mn5Bv4",
    "Authorization: ApiKey": "apikey-value-3Df4Gh5",
    "url token": "urltoken7Qa8Ws9Ed",
    "jsessionid": "jsess-value-2Rf3Tg4",
    "libpq": "libpq-pw-4Yh5Uj6",
    "AccountKey": "azure-key-8Ik9Ol0",
    "json": "json-key-1Pl2Ok3",
    "nbsp": "nbsp-value-5Ij6Uh7",
}


def test_run_of_a_shell_command_writes_no_secret(tmp_path):
    # GIVEN `diagnose run -- sh -c "cd /tmp && OPENAI_API_KEY=S exec python ... --key S ..."`:
    # the secrets sit in diagnose's own argv (capture.command, run.argv, the terminal's
    # Command: line) inside one shell string, and in the target's argv after exec
    s = SHELL_SECRETS
    args = [
        "--key", s["--key"], "-k", s["-k"], "--pw", s["--pw"],
        "--githubtoken", s["--githubtoken"],
        "--header", f"Authorization: ApiKey {s['Authorization: ApiKey']}",
        f"https://{s['url token']}@github.com/o/r",
        f"https://h/app;jsessionid={s['jsessionid']}",
        f"host=db password={s['libpq']} dbname=app",
        f"AccountName=a;AccountKey={s['AccountKey']};EndpointSuffix=x",
        json.dumps({"api_key": s["json"]}),
        f"--api-key\u00a0{s['nbsp']}",
    ]  # fmt: skip
    script = (
        f"cd /tmp && OPENAI_API_KEY={s['sh -c assignment']} exec {sys.executable} -c "
        + " ".join(shlex.quote(a) for a in [SERVICE, "30", *args])
    )
    out = tmp_path / "bundle"
    res = run_diagnose("run", "-d", "3", "--warmup", "1", "-o", str(out), "--", "sh", "-c", script)
    assert res.returncode in (0, 5), res.stderr
    # THEN none of them is in any file of the bundle, its reports, or what diagnose printed
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["capture"]["run"]["argv"][:2] == ["sh", "-c"]
    assert "--githubtoken" in manifest["target"]["cmdline"]  # the exec'd target, redacted
    printed = (res.stdout + res.stderr).replace("ready\n", "")
    files = [p for p in out.rglob("*") if p.is_file()]
    assert len(files) > 10
    for what, secret in SHELL_SECRETS.items():
        for p in files:
            assert secret.encode() not in p.read_bytes(), f"{what} found in {p.relative_to(out)}"
        assert secret not in printed, f"{what} printed"
