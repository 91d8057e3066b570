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
from diagnose.escape import term
from diagnose.render.schema import Report
from diagnose.render.text import pct
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


def sample_expected(name: str) -> tuple[str, ...]:
    """The verdicts a sample is built to show, ``category/kind`` (or ``category``), the
    intended one first: its ``EXPECTED_VERDICTS`` literal, read without running the file;
    () when it declares none."""
    path = samples_dir() / f"{name}.py"
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return ()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "EXPECTED_VERDICTS" for t in node.targets
        ):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return ()
            if isinstance(value, tuple) and all(isinstance(v, str) for v in value):
                return value
    return ()


#: the share of the cores other processes took at which scheduling.cpu_contention blames
#: them (rules/scheduling.toml): the same bar tells the user the host, not the sample, won
BUSY_HOST_SHARE = 0.2
_ORDINALS = {2: "second", 3: "third", 4: "fourth", 5: "fifth"}


def _label(category: object, kind: object) -> str:
    return f"{category}/{kind}" if kind else str(category)


def _matches(expected: tuple[str, ...], category: object, kind: object) -> bool:
    # an expectation without a kind ("idle") accepts any kind of its category
    return any(e in (_label(category, kind), category) for e in expected)


def expectation_lines(sample: str, expected: tuple[str, ...], report: Report) -> list[str]:
    """What the demo expected of ``sample``, what it got and, when they differ, why, from
    what the capture measured: other processes holding the cores, or a collector that could
    not run. [] for a sample that declares no expectation."""
    if not expected:
        return []
    v = report["verdict"]
    also = f" (or {', '.join(expected[1:])})" if len(expected) > 1 else ""
    lines = [f"Expected: {expected[0]}{also}: the bottleneck sample {sample} is built to show"]
    got = term(_label(v["primary"], v.get("kind")), 80)
    if _matches(expected, v["primary"], v.get("kind")):
        return [*lines, f"Got: {got}, as expected"]
    hit = next(
        (
            (i, r)
            for i, r in enumerate(v["ranking"], 1)
            if _matches(expected, r["category"], r["kind"])
        ),
        None,
    )
    where = (
        f"{_label(hit[1]['category'], hit[1]['kind'])} ranked {_ORDINALS.get(hit[0], f'#{hit[0]}')}"
        if hit
        else f"{expected[0]} not among the findings"
    )
    lines.append(f"Got: {got} (confidence {pct(v.get('confidence'))}); {term(where, 120)}")
    return lines + _why_lines(expected, report)


def _why_lines(expected: tuple[str, ...], report: Report) -> list[str]:
    """Why a demo got another verdict than its sample's, from the capture's measurements:
    other processes on the cores, or the expected rule left unevaluated (a collector that
    could not run)."""
    m = report["metrics"]
    others = m.get("host_neighbour_cpu_share")
    if not isinstance(others, (int, float)):
        others = m.get("host_foreign_cpu_share")
    busy = isinstance(others, (int, float)) and others >= BUSY_HOST_SHARE
    lines: list[str] = []
    if busy:
        names = m.get("host_neighbour_names")
        busiest = f" (busiest: {term(names, 200)})" if names else ""
        lines.append(
            f"Why: other processes took {pct(others)} of the cores the sample could use"
            f"{busiest}, so its threads waited for a core: the host was busy, not the sample. "
            "Run `diagnose demo` again on a quiet host (top shows what else runs)."
        )
    for rule in report.get("not_evaluated") or []:
        if _matches(expected, rule["category"], rule["kind"]):
            lines.append(
                f"Why: the rule that names {term(_label(rule['category'], rule['kind']), 80)} "
                f"({term(rule['id'], 80)}) could not be evaluated: "
                f"{term('; '.join(rule['reasons']), 400)}; `diagnose doctor` says what this "
                "host lets each collector do."
            )
    if not lines:
        lines.append(
            f"Why: not the host (other processes took {pct(others)} of the cores) nor a "
            "missing measurement: the findings above say what the sample did instead; run "
            "`diagnose demo` again, and report it if it persists."
        )
    return lines


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
