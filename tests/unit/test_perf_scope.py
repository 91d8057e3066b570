"""perf's on-CPU sampler records the CPUs the target may run on (``-a -C``) where diagnose
may, and reads back the target's events alone; else the target's threads (``-p``).
Per-thread events are switched in and out with every context switch of the target's
threads: measured on the 4-thread service (benchmarks overhead, few, 9 rounds), perf record
-p cost 2.4% of its throughput and -a 0.3% (docs/performance.md)."""

from __future__ import annotations

import io
import os
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from diagnose.bundle.writer import BundleWriter
from diagnose.collect.base import CaptureContext, CaptureOptions
from diagnose.collect.perf import oncpu, record
from diagnose.collect.perf.record import CPU_WIDE_MAX_CPUS, TARGET_MARK, PerfRecord


def rec(tmp_path: Path, cpu_wide: bool, pid: int | None = None) -> PerfRecord:
    t0 = time.monotonic()
    ctx = CaptureContext(
        target=SimpleNamespace(pid=pid or os.getpid()),  # type: ignore[arg-type]
        writer=BundleWriter.create(tmp_path / "b"),
        options=CaptureOptions(),
        t0=t0,
        deadline=t0 + 10,
    )
    return PerfRecord(ctx, "perf", "native", ["-e", "cpu-clock"], 2**20, 16, cpu_wide=cpu_wide)


def test_cpu_wide_records_the_targets_cpus_and_names_the_target(tmp_path):
    r = rec(tmp_path, cpu_wide=True)
    cpus = sorted(os.sched_getaffinity(os.getpid()))
    argv = r.argv()
    i = argv.index("-a")
    assert argv[i + 1 : i + 3] == ["-C", ",".join(map(str, cpus))] and "-p" not in argv
    # whom it records for is in its command line (ps; the tests' leftover checks)
    assert argv[argv.index("--") + 1 :][:2] == ["env", f"{TARGET_MARK}={os.getpid()}"]
    assert argv[-2] == "sleep"


def test_following_threads_is_the_fallback(tmp_path, monkeypatch):
    # near misses: not allowed, or the target may run on too many CPUs to record them all
    assert rec(tmp_path / "a", cpu_wide=False).scope() == ["-p", str(os.getpid())]
    many = set(range(CPU_WIDE_MAX_CPUS + 1))
    monkeypatch.setattr(record.os, "sched_getaffinity", lambda pid: many)
    r = rec(tmp_path / "b", cpu_wide=True)
    assert r.scope() == ["-p", str(os.getpid())] and "env" not in r.argv()


@pytest.mark.parametrize(
    ("cap_eff", "paranoid", "allowed"),
    [
        (1 << 21, "2", True),  # CAP_SYS_ADMIN (root outside a container)
        (1 << 38, "2", True),  # CAP_PERFMON
        (0, "0", True),  # every user may
        (0, "-1", True),
        (0, "1", False),  # near miss: an unprivileged user on a default host
        (0, "2", False),
        (1 << 19, "2", False),  # near miss: CAP_SYS_PTRACE alone is not enough
    ],
)
def test_who_may_record_cpu_wide(monkeypatch, cap_eff, paranoid, allowed):
    files = {
        "/proc/self/status": f"Name:\tdiagnose\nCapEff:\t{cap_eff:016x}\n",
        "/proc/sys/kernel/perf_event_paranoid": f"{paranoid}\n",
    }
    real_open = open

    def fake_open(path, *a, **kw):
        if path in files:
            return io.StringIO(files[path])
        return real_open(path, *a, **kw)

    monkeypatch.setattr("builtins.open", fake_open)
    assert record.cpu_wide_allowed() is allowed


@pytest.mark.parametrize(("scope", "allowed", "cpu_wide"), [("auto", True, True), ("threads", True, False), ("auto", False, False)])  # fmt: skip
def test_perf_scope_threads_keeps_perf_on_the_targets_threads(tmp_path, monkeypatch, scope, allowed, cpu_wide):  # fmt: skip
    # GIVEN the collector about to start perf (not started here)
    monkeypatch.setattr(oncpu, "cpu_wide_allowed", lambda: allowed)
    monkeypatch.setattr(record.PerfRecord, "start", lambda self: None)
    r = rec(tmp_path, cpu_wide=False)
    r.ctx.options.perf_scope = scope
    c = oncpu.PerfCollector()
    c.caps = SimpleNamespace(perf="perf")  # type: ignore[assignment]  # what the probe found
    # WHEN it starts: CPU-wide only where asked for (auto) and allowed
    c.start(r.ctx)
    assert c.rec is not None and bool(c.rec.cpus) is cpu_wide
