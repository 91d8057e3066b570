"""The demo: start a bundled sample service, attach to it, report, clean up."""

from __future__ import annotations

import ast
import contextlib
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from diagnose.collect.base import CaptureOptions
from diagnose.collect.registry import with_collector
from diagnose.collect.session import CaptureResult, capture
from diagnose.errors import DiagnoseError, ExitCode
from diagnose.resources import samples_dir
from diagnose.spawn import spawn

DEFAULT_SAMPLE = "lock_contention"
#: opt-in collectors a sample's bottleneck needs (the demo turns them on for it)
SAMPLE_COLLECTORS: dict[str, tuple[str, ...]] = {
    "false_sharing_native": ("false_sharing",),
    "false_sharing_service": ("false_sharing",),
}


def available_samples() -> list[str]:
    """The samples that run on their own; sweep_* are HTTP services that wait for load (and
    a locustfile): diagnose sweep drives them, not the demo."""
    return sorted(
        p.stem for p in samples_dir().glob("*.py") if not p.name.startswith(("_", "sweep_"))
    )


def sample_summary(name: str) -> str:
    """The first paragraph of a sample's docstring, on one line: the bottleneck it shows
    and how ("lock: every request thread runs the model under one shared lock"). The file
    is parsed, never run."""
    path = samples_dir() / f"{name}.py"
    try:
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    except (OSError, SyntaxError, ValueError):
        return ""
    return " ".join(doc.split("\n\n", 1)[0].split())


def check_sample(name: str) -> None:
    if name not in available_samples():
        raise DiagnoseError(
            f"no sample named {name!r}; available: {', '.join(available_samples())} "
            "(diagnose demo --list says what each shows)",
            ExitCode.USAGE,
        )


class SampleProcess:
    """A sample workload running as a child process; always cleaned up."""

    def __init__(
        self,
        name: str,
        seconds: float,
        args: list[str] | None = None,
        env: dict[str, str] | None = None,
    ) -> None:
        check_sample(name)
        path = samples_dir() / f"{name}.py"
        self.name = name
        # stderr goes to a file, not a pipe nobody reads while the sample runs: a chatty
        # sample would fill the pipe and block
        self.stderr = tempfile.TemporaryFile()  # noqa: SIM115 - closed in stop()
        # its own session, as a real service (not in diagnose's CPU share: autogroup); it
        # gets SIGTERM if diagnose dies (it has no children of its own to take along)
        self.proc = spawn(
            [sys.executable, str(path), "--seconds", str(seconds), *(args or [])],
            cwd=str(path.parent),
            stdout=subprocess.DEVNULL,
            stderr=self.stderr,
            env={**os.environ, **(env or {})},
        )

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait_ready(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self.stderr.seek(0)
                err = self.stderr.read().decode("utf-8", "replace")
                raise DiagnoseError(
                    f"sample {self.name} exited at start: {err.strip()[-400:]}", ExitCode.INTERNAL
                )
            time.sleep(0.05)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        with contextlib.suppress(OSError):
            self.stderr.close()


def run_demo(
    sample: str,
    out: Path,
    duration: float,
    progress: Callable[[str], None] | None = None,
    options: CaptureOptions | None = None,
    command: list[str] | None = None,
) -> CaptureResult:
    """Start ``sample``, capture it into ``out`` for ``duration`` seconds, stop it (always)."""
    opts = options or CaptureOptions(duration=duration)
    if options is None:
        for name in SAMPLE_COLLECTORS.get(sample, ()):
            opts.collectors = with_collector(opts.collectors, name)
    proc = SampleProcess(sample, seconds=duration + 30)
    try:
        proc.wait_ready(1.5)  # let it warm up: first requests are not representative
        return capture(
            proc.pid,
            out,
            opts,
            follow_children=False,
            progress=progress,
            command=command
            or ["diagnose", "demo", "--sample", sample, "--duration", f"{duration:g}"],
        )
    finally:
        proc.stop()
