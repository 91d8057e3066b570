"""What the reliability and safety tests check on a live target, read from /proc and psutil.

- :func:`health`: is any thread of the target stopped (``T``, ``t``) or traced (``TracerPid``)?
- :func:`helpers_of`: py-spy and perf processes aimed at a PID, whoever their parent is now
  (a helper whose diagnose was killed is re-parented, so it is no longer our descendant).
- :func:`cpu_rate`: CPU seconds the target used per wall second, a throughput proxy for
  targets whose requests cost a fixed amount of CPU.
- :func:`started`: a target in a session of its own, killed with its whole process group.
"""

from __future__ import annotations

import contextlib
import os
import resource
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import psutil

from tests.e2e.cli import diagnose_argv

HELPER_NAMES = ("py-spy", "perf")


@dataclass(frozen=True)
class Health:
    threads: int
    stopped: dict[int, str]  # tid -> state, for threads in T (stopped) or t (tracing stop)
    traced: dict[int, int]  # tid -> TracerPid, for threads with a tracer

    @property
    def ok(self) -> bool:
        return self.threads > 0 and not self.stopped and not self.traced


def health(pid: int) -> Health:
    stopped: dict[int, str] = {}
    traced: dict[int, int] = {}
    count = 0
    with contextlib.suppress(OSError):
        for name in os.listdir(f"/proc/{pid}/task"):
            tid = int(name)
            try:
                with open(f"/proc/{pid}/task/{tid}/stat", encoding="utf-8", errors="replace") as f:
                    stat = f.read()
                with open(
                    f"/proc/{pid}/task/{tid}/status", encoding="utf-8", errors="replace"
                ) as f:
                    status = f.read()
            except OSError:
                continue  # the thread exited meanwhile
            count += 1
            state = stat[stat.rindex(")") + 2]
            if state in ("T", "t"):
                stopped[tid] = state
            tracer = next(
                int(line.split()[1]) for line in status.splitlines() if line.startswith("TracerPid")
            )
            if tracer:
                traced[tid] = tracer
    return Health(count, stopped, traced)


def settled_health(pid: int, seconds: float = 1.0) -> Health:
    """The target's health, read until it is fine or ``seconds`` passed: a sample taken at
    the moment a tracer is detaching would show a tracing stop that ends a moment later."""
    deadline = time.monotonic() + seconds
    h = health(pid)
    while not h.ok and time.monotonic() < deadline:
        time.sleep(0.05)
        h = health(pid)
    return h


def helpers_of(pid: int) -> list[psutil.Process]:
    """Live py-spy / perf processes whose command line names ``pid``."""
    out = []
    for p in psutil.process_iter(["name", "cmdline", "status"]):
        with contextlib.suppress(psutil.Error):
            if p.info["name"] not in HELPER_NAMES or p.info["status"] == psutil.STATUS_ZOMBIE:
                continue
            argv = p.info["cmdline"] or []
            # -p PID, or a CPU-wide perf's marker (collect/perf/record.py PerfRecord.marker)
            if f"DIAGNOSE_TARGET={pid}" in argv or any(
                a == str(pid) and i and argv[i - 1] in ("--pid", "-p") for i, a in enumerate(argv)
            ):
                out.append(p)
    return out


def wait_no_helpers(pid: int, timeout: float) -> list[psutil.Process]:
    """Helpers still aimed at ``pid`` after ``timeout`` s (an empty list when they all went)."""
    deadline = time.monotonic() + timeout
    left = helpers_of(pid)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = helpers_of(pid)
    return left


def kill_helpers(pid: int) -> None:
    """Clean-up after a failed test."""
    for p in helpers_of(pid):
        with contextlib.suppress(psutil.Error):
            p.kill()


def _no_core_dumps() -> None:  # a crashed diagnose must not litter the tree with a core file
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def start_attach(pid: int, out: Path, seconds: float, *extra: str) -> subprocess.Popen[str]:
    """``diagnose attach PID -d SECONDS -o OUT EXTRA...`` in the background, stderr piped."""
    return subprocess.Popen(
        diagnose_argv("attach", str(pid), "-d", str(seconds), "-o", str(out), *extra),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=_no_core_dumps,
    )


def cpu_seconds(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


def cpu_rate(pid: int, seconds: float = 1.5) -> float:
    """CPU seconds per wall second the process used over the next ``seconds``."""
    before, t0 = cpu_seconds(pid), time.monotonic()
    time.sleep(seconds)
    return (cpu_seconds(pid) - before) / (time.monotonic() - t0)


@contextlib.contextmanager
def started(argv: Sequence[str]) -> Iterator[subprocess.Popen[str]]:
    """Start ``argv`` in a session of its own; yield it once it printed ``ready``; kill its
    whole process group (forked workers too) at the end, whatever happened."""
    proc = subprocess.Popen(
        list(argv), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
        start_new_session=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.strip() == "ready", f"the target said {line!r} instead of ready"
        yield proc
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            proc.communicate(timeout=10)
        kill_helpers(proc.pid)
