"""The other workers of a pre-fork service, captured beside the busiest (``--workers``).

One capture's collectors follow one process (py-spy and the GIL sampler take one PID; the
analyses of the GIL and of futex addresses are per process). So each other worker gets a
capture of its own: a child ``diagnose attach PID --no-follow --no-report``, started just
before diagnose's own collectors so the windows nearly coincide, writing a whole bundle
into ``workers/PID/`` of this bundle through the descriptor diagnose holds on
``workers/`` (never a path someone could swap). Each child gets its share of the CPU
budget and of the disk budget (:func:`share`), the same duration and options, and the
poll() fix for perf diagnose built (collect/perf/pollfix.py), by descriptor: building its own
took each child 0.6 s of its start-up and 0.4 CPU-s beside the service.

Stopping: a capture ended early (Ctrl-C, the disk budget, the target's exit) stops the
children with SIGINT, which makes each write a complete bundle of what it has. They are
:class:`~diagnose.collect.child.Child` helpers: killed if diagnose dies, never left behind.
What each did is written to ``workers.json`` (:data:`WORKERS_MEMBER`): the PID, its
bundle's directory, ``ok``/``partial``/``failed`` and why; the report judges each bundle
(diagnose/app/service.py).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path

from diagnose.bundle.safedir import ANCHOR
from diagnose.bundle.writer import WORKERS_DIR, WORKERS_MEMBER, BundleWriter
from diagnose.collect.base import CaptureOptions
from diagnose.collect.budget import default_budget
from diagnose.collect.child import OWN_ACCOUNT, Child
from diagnose.collect.perf import pollfix
from diagnose.collect.perf.sched import event_budget
from diagnose.collect.system import cpu_capacity
from diagnose.collect.target import Target
from diagnose.errors import OutputError

#: how long the workers' captures wait for the poll() fix's build to hand it down
#: (it takes 0.2-0.5 s, begun as the capture started)
PREPARE_WAIT_S = 5.0
#: how long a child may take after its window to write its bundle before it is stopped
FINISH_GRACE = 60.0
#: exit codes of ``diagnose attach``: 0 complete, 5 partial, 6 cut short by the disk (errors.py)
_OK, _PARTIAL, _OUTPUT = 0, 5, 6


@dataclass
class WorkerRun:
    pid: int
    child: Child | None
    status: str = "running"  # ok | partial | failed
    reason: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "pid": self.pid,
            "dir": f"{WORKERS_DIR}/{self.pid}",
            "status": self.status,
            "reason": self.reason,
        }


def share(options: CaptureOptions, pid: int, workers: int) -> CaptureOptions:
    """Each of ``workers`` captures' options: 1/N of the CPU budget (the default one worked
    out for ``pid``'s cores where none was given; 0, no budget, stays 0), of the disk
    budget and of the scheduler trace's event budget (where ``--sched-events`` was not
    given: their conversions run side by side, on the cores the service keeps busy)."""
    if workers <= 1:
        return options
    budget = options.cpu_budget
    if budget is None:
        budget = default_budget(cpu_capacity(pid).get("cores_available"))
    events = options.sched_events
    return replace(
        options,
        cpu_budget=round(budget / workers, 4) if budget else budget,
        max_bundle_bytes=max(2**20, options.max_bundle_bytes // workers),
        sched_events=event_budget(options.duration, workers) if events is None else events,
    )


def child_argv(
    pid: int,
    out: str,
    options: CaptureOptions,
    siblings: tuple[int, ...] = (),
    pollfix_fd: int | None = None,
) -> list[str]:
    """``diagnose attach`` for one worker with ``options`` (already its share; its perf
    follows its threads); its ``siblings``: the service's other processes, as target
    selection found them; ``pollfix_fd``: the directory of perf's poll() fix, inherited."""
    argv = [sys.executable, "-m", "diagnose", "attach", str(pid), "--no-follow", "--no-report"]
    if siblings:
        argv += ["--siblings", ",".join(str(p) for p in siblings)]
    if pollfix_fd is not None:
        argv += ["--pollfix-fd", str(pollfix_fd)]
    argv += ["--out", out, "--duration", f"{options.duration:g}"]
    argv += ["--max-bundle-mb", str(max(1, options.max_bundle_bytes // 2**20))]
    argv += ["--tables", options.tables]
    # its perf follows its threads: a CPU-wide one would record the CPUs diagnose's own
    # capture records already, and convert every worker's samples again to keep its own
    argv += ["--perf-scope", "threads"]
    if options.cpu_budget is not None:
        argv += ["--cpu-budget", f"{options.cpu_budget:g}"]
    if options.rate_chosen:
        argv += ["--rate", str(options.rate)]
    if options.sched_events is not None:
        argv += ["--sched-events", str(options.sched_events)]
    if options.proc_rate_chosen:
        argv += ["--proc-rate", str(options.proc_rate)]
    argv.append("--native" if options.native else "--no-native")
    argv.append("--nonblocking" if options.nonblocking else "--blocking")
    if options.collectors is not None:
        argv += ["--collectors", ",".join(options.collectors)]
    return argv


def _env() -> dict[str, str]:
    """This environment, with this diagnose's package first on the path: the child runs
    the same code, installed or not."""
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    return env


class WorkerCaptures:
    """The child captures of one capture's other workers."""

    def __init__(self, writer: BundleWriter, runs: list[WorkerRun]) -> None:
        self.writer = writer
        self.runs = runs

    @classmethod
    def start(cls, target: Target, writer: BundleWriter, options: CaptureOptions) -> WorkerCaptures:
        """A child capture of each of ``target.also``."""
        runs: list[WorkerRun] = []
        if not target.also:
            return cls(writer, runs)
        base = Path(f"{ANCHOR}{writer.dir.subdir_fd((WORKERS_DIR,), create=True)}")
        env = _env()
        lib = _pollfix(options)
        for pid in target.also:
            siblings = (target.pid, *(p for p in target.siblings if p != pid))
            try:
                child = Child(
                    child_argv(
                        pid, str(base / str(pid)), options, siblings, lib[0] if lib else None
                    ),
                    base / f"{pid}.log",
                    label=OWN_ACCOUNT,
                    env=env,
                    pass_fds=lib,
                )
                runs.append(WorkerRun(pid, child))
            except OSError as exc:
                runs.append(WorkerRun(pid, None, "failed", f"could not start its capture: {exc}"))
        return cls(writer, runs)

    def stop(self) -> None:
        """End every child's capture early: each writes what it has."""
        for r in self.runs:
            if r.child is not None and r.child.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    r.child.proc.send_signal(signal.SIGINT)

    def finish(self, deadline: float) -> None:
        """Wait for every child until ``deadline`` (monotonic), stop the late ones, record
        each one's outcome in ``workers.json``."""
        for r in self.runs:
            if r.child is None:
                continue
            rc = r.child.wait(max(0.0, deadline - time.monotonic()))
            if rc is None:
                rc = r.child.stop(grace=10.0)
                r.reason = "its capture ran past its time and was stopped"
            settle(r, rc)
        self.write()

    def write(self) -> None:
        if not self.runs:
            return
        doc = {"workers": [r.to_dict() for r in self.runs]}
        with contextlib.suppress(OSError, OutputError):
            self.writer.write_json(WORKERS_MEMBER, doc)

    def kill(self) -> None:
        """Last resort (an error in diagnose's own capture): no child outlives it, and what
        each did is written."""
        stopped = False
        for r in self.runs:
            if r.child is not None and r.child.poll() is None:
                r.reason = "stopped early: diagnose's own capture failed"
                settle(r, r.child.stop(grace=5.0))
                stopped = True
        if stopped:
            self.write()


def _pollfix(options: CaptureOptions) -> tuple[int, ...]:
    """The descriptor of the directory holding perf's poll() fix, once built (its build
    began as the capture started; diagnose's own perf waits for it next anyway), for the
    workers' captures to inherit; none where no perf collector runs or it was not built."""
    if options.collectors is not None and not {"perf", "perf_sched"} & set(options.collectors):
        return ()
    if pollfix.preload(timeout=PREPARE_WAIT_S) is None:
        return ()
    return pollfix.fds()


def settle(r: WorkerRun, rc: int) -> None:
    """``r``'s status from its capture's exit code (``diagnose attach``'s, errors.py)."""
    if rc == _OK:
        r.status = "ok"
    elif rc in (_PARTIAL, _OUTPUT):
        r.status = "partial"
        r.reason = r.reason or (
            "its share of the disk budget ended it early"
            if rc == _OUTPUT
            else "some of its collectors could not measure everything"
        )
    else:
        r.status = "failed"
        text = r.child.stderr_text() if r.child is not None else ""
        r.reason = r.reason or _last_line(text) or f"exit code {rc}"


def _last_line(text: str) -> str:
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    return lines[-1][:300] if lines else ""
