"""Running a sweep: per setting (start the service with --run), per step: warm up, capture,
take the generator's figures for the same window and its own CPU; write the record.

The record, ``SWEEPDIR/sweep.json`` (docs/sweep.md), holds the raw facts only: what was
asked, each step's load figures, the generator's CPU, the capture's outcome and where its
bundle is. It is rewritten after every step, so a sweep cut short (Ctrl-C, a crash, a kill)
keeps every finished step, and ``diagnose report SWEEPDIR`` renders it. Verdicts and the
knee are derived from it and the step bundles (:mod:`diagnose.sweep.model`).

Safety, as for ``attach`` and ``run``: the load generator and a started service each run in
a process group of their own that dies with diagnose (:class:`~diagnose.run.LaunchedCommand`)
and is stopped on every path out of a step or a setting; each capture is the normal one
(:func:`~diagnose.collect.session.capture`), bounded and never leaving the target stopped.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from diagnose import __version__
from diagnose.app.report import write_reports
from diagnose.app.reporters import formats_of
from diagnose.bundle.sections import CaptureInfo
from diagnose.bundle.writer import DIR_MODE, BundleWriter
from diagnose.collect.base import CaptureOptions
from diagnose.collect.redact import redact_argv, redact_text
from diagnose.collect.session import CaptureResult, capture, validate_options
from diagnose.collect.target import check_trace_access, resolve_target
from diagnose.errors import DiagnoseError, LoadGeneratorError, OutputError, TargetError, UsageError
from diagnose.render.schema import Report
from diagnose.run import LaunchedCommand, terminate_is_interrupt
from diagnose.sweep.loadgen import CpuWatch, Driver, StepFailed, describe_exit, make_driver
from diagnose.sweep.plan import LoadSpec, Setting, service_command
from diagnose.sweep.record import RECORD, SCHEMA, SCHEMA_VERSION

STEP_FORMATS = formats_of("report")
#: Each step's capture runs longer than its load window, which starts once the collectors
#: are up (their start-up costs CPU: it must not fall into the window). How much longer
#: follows the start-up measured at the previous step (2-3.6 s on a loaded 2-core host,
#: 0.3 s with /proc alone), within these bounds; the first step allows CAPTURE_LEAD_S.
CAPTURE_LEAD_S = 3.0
LEAD_BOUNDS_S = (1.0, 10.0)


@dataclass
class SweepPlan:
    """Everything one sweep needs, validated (diagnose/cli/sweep.py builds it)."""

    out: Path
    load: LoadSpec
    steps: tuple[int, ...]
    settings: list[Setting]
    options: CaptureOptions  # the capture per step (its duration is the step's window)
    step_duration: float = 10.0
    warmup: float = 5.0
    pid: int | None = None
    run_argv: tuple[str, ...] = ()
    vary: tuple[str, tuple[str, ...]] | None = None
    sla_p99_ms: float | None = None
    peak_qps: float | None = None
    startup: float | None = None  # --run: longest wait for --host to accept connections
    grace: float = 5.0
    follow: bool = True
    rules_dirs: tuple[Path, ...] = ()
    step_formats: tuple[str, ...] = STEP_FORMATS
    command: list[str] = field(default_factory=lambda: list(sys.argv))

    def validate(self) -> None:
        if not (0 < self.step_duration <= 3600):
            raise UsageError(
                f"--step-duration must be between 0 and 3600 seconds, not {self.step_duration:g}"
            )
        if not (0 <= self.warmup <= 3600):
            raise UsageError(f"--warmup must be between 0 and 3600 seconds, not {self.warmup:g}")
        if self.sla_p99_ms is not None and not self.sla_p99_ms > 0:
            raise UsageError(f"--sla-p99 must be a positive number of ms, not {self.sla_p99_ms:g}")
        if self.peak_qps is not None and not self.peak_qps > 0:
            raise UsageError(f"--peak-qps must be positive, not {self.peak_qps:g}")
        if (self.pid is None) == (not self.run_argv):
            raise UsageError("give either a PID, or --run -- CMD ARGS... to start the service")
        if self.vary is not None and not self.run_argv:
            raise UsageError("--vary needs --run: diagnose restarts the service for each setting")
        if self.startup is not None and not (0 <= self.startup <= 3600):
            raise UsageError(f"--startup must be between 0 and 3600 seconds, not {self.startup:g}")
        validate_options(replace(self.options, duration=self.step_duration))


ProgressFn = Callable[[str], None]
StepFn = Callable[[Setting, dict[str, Any], Report | None], None]


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def _mkdir(path: Path) -> Path:
    try:
        path.mkdir(mode=DIR_MODE, parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot create {path}: {exc.strerror or exc}") from exc
    return path


class Sweep:
    """One sweep being run: the plan, the driver, the record."""

    def __init__(
        self,
        plan: SweepPlan,
        progress: ProgressFn | None = None,
        on_step: StepFn | None = None,
    ) -> None:
        plan.validate()
        self.plan = plan
        self.progress = progress or (lambda _s: None)
        self.on_step = on_step or (lambda *_a: None)
        self.driver: Driver = make_driver(plan.load)  # a missing generator fails before anything
        self.record: dict[str, Any] = {}
        self.any_figures = False
        self.lead = CAPTURE_LEAD_S
        # SWEEPDIR, held open once created: everything inside is reached through its
        # descriptor (``root``), never by re-walking plan.out (docs/reliability.md)
        self.writer: BundleWriter | None = None
        self.root: Path = plan.out

    # -- the record ---------------------------------------------------------------------

    def _new_record(self) -> dict[str, Any]:
        p = self.plan
        return {
            "schema": SCHEMA,
            "schema_version": SCHEMA_VERSION,
            "tool_version": __version__,
            "state": "running",
            "end_reason": None,
            "started": _now(),
            "ended": None,
            "command": redact_argv(p.command),
            "target": {"pid": p.pid}
            if p.pid is not None
            else {"run": redact_argv(list(p.run_argv))},
            "load": {
                "kind": p.load.kind,
                "tool": p.load.tool,
                "command": redact_argv(
                    [str(p.load.locustfile)] if p.load.kind == "locust" else list(p.load.template)
                ),
                "host": redact_text(p.load.host) if p.load.host else p.load.host,
            },
            "steps_requested": list(p.steps),
            "step_duration_s": self.driver.window(p.step_duration),
            "warmup_s": p.warmup,
            "sla_p99_ms": p.sla_p99_ms,
            "peak_qps": p.peak_qps,
            "vary": None if p.vary is None else {"name": p.vary[0], "values": list(p.vary[1])},
            "capture": {
                "collectors": list(p.options.collectors) if p.options.collectors else None,
                "rate_hz": p.options.rate,
                "proc_rate_hz": p.options.proc_rate,
            },
            "host": {"hostname": socket.gethostname(), "logical_cpus": os.cpu_count()},
            "settings": [],
        }

    def save(self) -> None:
        assert self.writer is not None
        self.writer.write_json(RECORD, self.record)

    # -- running ------------------------------------------------------------------------

    def run(self) -> dict[str, Any]:
        """Run every setting and step; return the record (also in SWEEPDIR/sweep.json).

        Interruptions (Ctrl-C, SIGTERM) end the sweep with ``state: interrupted`` after
        stopping what runs; the steps finished so far are kept.
        """
        if self.plan.pid is not None:  # no such process, or not ours to trace: fail first
            check_trace_access(resolve_target(self.plan.pid, self.plan.follow).pid)
        # new or empty, 0700, ours; fails before anything starts
        self.writer = BundleWriter.create(self.plan.out)
        self.root = self.writer.root
        self.record = self._new_record()
        self.save()
        try:
            with terminate_is_interrupt():
                for setting in self.plan.settings:
                    self._run_setting(setting)
            self.record["state"] = "complete"
        except KeyboardInterrupt as exc:
            self.record["state"] = "interrupted"
            self.record["end_reason"] = f"interrupted ({exc.args[0] if exc.args else 'SIGINT'})"
        except BaseException as exc:
            self.record["state"] = "failed"
            self.record["end_reason"] = str(exc) or type(exc).__name__
            raise
        finally:
            self.record["ended"] = _now()
            with contextlib.suppress(OutputError):
                self.save()
            self.writer.close()
        return self.record

    def _run_setting(self, setting: Setting) -> None:
        entry: dict[str, Any] = {
            "name": setting.name,
            "slug": setting.slug,
            "var": setting.var,
            "value": setting.value,
            "service": None,
            "stopped_early": None,
            "steps": [],
        }
        self.record["settings"].append(entry)
        setting_dir = _mkdir(self.root / "steps" / setting.slug)
        service: LaunchedCommand | None = None
        try:
            if self.plan.run_argv:
                service = self._start_service(setting, entry, setting_dir)
                if service is None:
                    return
            pid = service.pid if service is not None else self.plan.pid
            assert pid is not None
            for i, users in enumerate(self.plan.steps):
                label = f"{setting.name}, step {i + 1}/{len(self.plan.steps)}: {users} users"
                step = self._run_step(setting, users, pid, setting_dir, label)
                entry["steps"].append(step)
                self.save()
                if (
                    step["status"] == "failed"
                    and not self.any_figures
                    and not step.get("target_gone")
                ):
                    # the generator has not produced a single window: it cannot run here
                    raise LoadGeneratorError(
                        f"the first step failed: {step['reason']} (its output: "
                        f"{self.plan.out / step['load_dir']})"
                    )
                if step["status"] == "interrupted":  # the capture ended on a signal
                    ended_by = str((step.get("capture") or {}).get("ended_by") or "")
                    raise KeyboardInterrupt(ended_by.partition("(")[2].rstrip(")") or "SIGINT")
                if step.get("target_gone"):
                    entry["stopped_early"] = step["reason"]
                    break
        finally:
            if service is not None:
                self.progress(f"{setting.name}: stopping the service")
                exit_ = service.stop(self.plan.grace, capture_ended=True)
                entry["service"] = exit_.to_dict()
                self.save()

    def _start_service(
        self, setting: Setting, entry: dict[str, Any], setting_dir: Path
    ) -> LaunchedCommand | None:
        argv, env_extra = service_command(self.plan.run_argv, setting)
        entry["command"] = redact_argv(argv)
        entry["env"] = env_extra
        log = setting_dir / "service.log"
        with log.open("wb") as fh:
            service = LaunchedCommand(argv, stdout=fh, stderr=fh, env={**os.environ, **env_extra})
        try:
            self._wait_ready(service, setting)
        except TargetError as exc:
            exit_ = service.stop(self.plan.grace, capture_ended=False)
            entry["service"] = exit_.to_dict()
            entry["stopped_early"] = f"{exc} (its output: {log})"
            self.save()
            if setting is self.plan.settings[0]:
                raise TargetError(f"{exc}; its output is in {log}") from None
            return None
        except BaseException:
            service.stop(self.plan.grace, capture_ended=False)
            raise
        return service

    def _wait_ready(self, service: LaunchedCommand, setting: Setting) -> None:
        host = self.plan.load.host
        url = urlsplit(host) if host else None
        port = (url.port or (443 if url.scheme == "https" else 80)) if url else None
        limit = self.plan.startup if self.plan.startup is not None else (30.0 if url else 3.0)
        deadline = time.monotonic() + limit
        while True:
            st = service.status()
            if st is not None:
                raise TargetError(
                    f"the service ({setting.name}) {describe_exit(st)} "
                    f"{time.monotonic() - service.started:.1f} s after it started"
                )
            left = deadline - time.monotonic()
            if url is not None and port is not None:
                with (
                    contextlib.suppress(OSError),
                    socket.create_connection((url.hostname or "127.0.0.1", port), timeout=0.5),
                ):
                    return
                if left <= 0:
                    raise TargetError(
                        f"the service ({setting.name}) did not accept connections on {host} "
                        f"within {limit:g} s (--startup)"
                    )
                self.progress(f"{setting.name}: waiting for {host} ({left:4.1f} s left)")
            elif left <= 0:
                return
            time.sleep(0.1)

    def _rel(self, p: Path) -> str:
        return str(p.relative_to(self.root))

    def _run_step(
        self, setting: Setting, users: int, pid: int, setting_dir: Path, label: str
    ) -> dict[str, Any]:
        plan = self.plan
        step_dir = _mkdir(setting_dir / f"users-{users}")
        load_dir = _mkdir(step_dir / "load")
        bundle = step_dir / "bundle"
        window = self.driver.window(plan.step_duration)
        step = _new_step(users, self._rel(step_dir), self._rel(load_dir))
        run = None
        report = None
        try:
            self.progress(f"{label}: starting {self.driver.tool}, warming up {plan.warmup:g} s")
            run = self.driver.start(users, load_dir, plan.warmup, window)
            run.wait_warm(plan.warmup + 90)
            went: dict[str, Any] = {}

            def go() -> None:  # the collectors are up: the load window starts now
                try:
                    went["wall"] = run.go()
                    went["at"] = time.monotonic()
                    went["watch"] = CpuWatch(run.pid or 0, run.launched_at_go)
                    went["watch"].start(window)
                except Exception as exc:  # recorded below; the capture ends normally
                    went["error"] = exc

            step["bundle"] = self._rel(bundle)
            try:
                result = capture(
                    pid,
                    bundle,
                    replace(plan.options, duration=window + self.lead),
                    follow_children=plan.follow,
                    progress=lambda s: self.progress(f"{label}: {s}"),
                    command=plan.command,
                    on_started=go,
                )
            except TargetError as exc:
                step["reason"] = f"the service is gone: {exc}"
                step["target_gone"] = True
                step["bundle"] = None
                return step
            cap = result.manifest.capture
            step["capture"] = _capture_record(result)
            if "watch" in went:
                step["generator"] = went["watch"].result()
            if cap.interrupted:
                step["status"] = "interrupted"
                step["reason"] = f"the sweep was {cap.ended_by}"
                return step
            if "error" in went or "at" not in went:
                why = went.get("error") or f"the capture ended first ({cap.ended_by})"
                raise StepFailed(f"the load window did not start: {why}")
            figures = run.finish()
            step["load"] = figures.to_dict()
            step["window"] = _load_window(cap, went["at"], went["wall"], figures.seconds)
            # the capture starts this much before the load next time (bounded)
            lead = step["window"]["capture_lead_s"]
            self.lead = min(LEAD_BOUNDS_S[1], max(LEAD_BOUNDS_S[0], 1.25 * lead + 0.5))
            self.any_figures = True
            _settle(step, cap.ended_by, result.partial)
        except StepFailed as exc:
            step["reason"] = str(exc)
        except KeyboardInterrupt:
            step["status"] = "interrupted"
            step["reason"] = "the sweep was interrupted before this step's window"
            raise
        finally:
            if run is not None:
                step["generator_exit"] = run.stop()
            if step["bundle"] is not None and (self.root / step["bundle"]).is_dir():
                self.progress(f"{label}: writing the step's report")
                report = self._step_report(self.root / step["bundle"], step)
            self.on_step(setting, step, report)
        return step

    def _step_report(self, bundle: Path, step: dict[str, Any]) -> Report | None:
        try:
            d, _ = write_reports(bundle, list(self.plan.step_formats), None, self.plan.rules_dirs)
        except DiagnoseError as exc:  # the bundle stays; `diagnose report SWEEPDIR` retries
            step["report_error"] = str(exc)
            return None
        return d.report


def step_outcome_counts(record: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for s in record.get("settings", []):
        for step in s.get("steps", []):
            out[step["status"]] = out.get(step["status"], 0) + 1
    return out


def sweep_is_partial(record: dict[str, Any]) -> bool:
    """Exit code 5: interrupted, a step failed or was partial, or a setting stopped early."""
    if record.get("state") != "complete":
        return True
    counts = step_outcome_counts(record)
    if any(k != "ok" for k in counts):
        return True
    return any(s.get("stopped_early") for s in record.get("settings", []))


def _new_step(users: int, step_dir: str, load_dir: str) -> dict[str, Any]:
    """A step's record before it ran: failed until it proves otherwise."""
    return {
        "users": users,
        "status": "failed",
        "reason": "",
        "dir": step_dir,
        "load_dir": load_dir,
        "bundle": None,
        "load": None,
        "generator": None,
        "window": None,
        "capture": None,
    }


def _capture_record(result: CaptureResult) -> dict[str, Any]:
    cap = result.manifest.capture
    return {
        "ended_by": cap.ended_by,
        "partial": result.partial,
        "started": cap.started,
        "seconds": cap.duration_actual,
        "pid": result.target.pid,
    }


def _load_window(
    cap: CaptureInfo, load_at: float, load_wall: Any, load_seconds: float
) -> dict[str, Any]:
    """Where the load window sat in the capture: how long the capture ran before it, and
    the share of the load window the measured window covers."""
    # the measured window: from when every collector recorded (window_start_s)
    cap_start = cap.monotonic_start + cap.window_start_s
    cap_end = cap_start + (cap.duration_actual or 0.0)
    covered = min(cap_end, load_at + load_seconds) - load_at
    return {
        "load_start": load_wall,
        "load_seconds": load_seconds,
        "capture_lead_s": round(load_at - cap_start, 3),
        "capture_covers": round(max(0.0, covered) / load_seconds, 3) if load_seconds else None,
    }


def _settle(step: dict[str, Any], ended_by: str | None, partial: bool) -> None:
    """A step whose load window ran: ok, or partial and why."""
    if ended_by == "target_exited":
        step["status"] = "partial"
        step["reason"] = "the service exited during the capture"
        step["target_gone"] = True
    elif partial:
        step["status"] = "partial"
        step["reason"] = "the capture is partial (a collector failed): see its report"
    else:
        step["status"] = "ok"
