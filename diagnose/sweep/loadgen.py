"""Driving existing load generators, one run per step, and reading their figures.

- :class:`LocustDriver`: ``locust --headless`` with the user's locustfile plus
  ``locust_plugin.py``, which warms up inside locust, waits for diagnose's go (its
  collectors are up), resets locust's statistics and writes locust's figures for exactly
  the measured window (``window.json``);
- :class:`CommandDriver`: any command with ``{users}`` and ``{duration}``: run once for the
  warm-up (its figures discarded), and again at the go for the window; its output is parsed by
  :func:`parse_wrk` (wrk; diagnose adds ``-s wrk_report.lua`` for P95 unless the command has
  a script of its own) or :func:`parse_json_line` (the documented contract, docs/sweep.md).

Each run is a :class:`~diagnose.run.LaunchedCommand`: its own process group, killed with
diagnose (PDEATHSIG and a guard), stopped with SIGTERM then SIGKILL on every path out.
:class:`CpuWatch` measures the generator's own CPU over the window: when its busiest thread
wanted a core (ran, or waited in the run queue) for :data:`SATURATED_SHARE` of the window,
the generator, not the service, set the pace.
"""

from __future__ import annotations

import csv
import importlib.util
import io
import math
import os
import re
import shutil
import sys
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import psutil

from diagnose.bundle.schema import parse_json
from diagnose.collect.child import anchored_fds
from diagnose.collect.tasks import schedstats
from diagnose.errors import BadBundle, DiagnoseError, LoadGeneratorError
from diagnose.run import LaunchedCommand
from diagnose.sweep.plan import LoadSpec, fill_template, whole_seconds

#: The busiest generator thread wanting a core (on it or queued for it) this share of the
#: window means the generator could not send faster. Locust warns at 90% CPU too.
SATURATED_SHARE = 0.9
PLUGIN = Path(__file__).with_name("locust_plugin.py")
WRK_SCRIPT = Path(__file__).with_name("wrk_report.lua")
#: How long past its window a generator may take to hand over its figures and exit.
FINISH_SLACK_S = 30.0


#: The ranges figures must be in: a window of a millisecond to 100 days, latencies to 11 days.
MIN_SECONDS = 0.001
MAX_SECONDS = 1e7
MAX_REQUESTS = 1e12
MAX_MS = 1e9
MIN_MS = 1e-6  # a nanosecond: a latency below it is no measurement (and divides to infinity)


def _real(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


def _whole(v: object) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


class StepFailed(Exception):
    """A step produced no figures (the generator crashed, never started measuring ...):
    the step is recorded as failed, with this message as its reason."""


@dataclass(frozen=True)
class LoadFigures:
    """What the load generator measured over one window. ``requests`` counts every request
    sent and answered or failed; ``failures`` those that failed (errors, non-2xx/3xx)."""

    tool: str
    seconds: float
    requests: int
    failures: int = 0
    p50_ms: float | None = None
    p95_ms: float | None = None
    p99_ms: float | None = None
    mean_ms: float | None = None
    max_ms: float | None = None
    errors: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        """Figures from a file or a record anyone may have edited: in range, or ValueError."""
        empty = (
            self.seconds == 0 and self.requests == 0
        )  # locust's CSV of a window without requests
        if not _real(self.seconds) or not (MIN_SECONDS <= self.seconds <= MAX_SECONDS or empty):
            raise ValueError(f"'seconds' must be between {MIN_SECONDS} and {MAX_SECONDS:g}")
        if not _whole(self.requests) or not 0 <= self.requests <= MAX_REQUESTS:
            raise ValueError(f"'requests' must be a whole number from 0 to {MAX_REQUESTS:g}")
        if not _whole(self.failures) or not 0 <= self.failures <= self.requests:
            raise ValueError("'failures' must be a whole number from 0 to 'requests'")
        for name in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "max_ms"):
            v = getattr(self, name)
            if v is not None and (not _real(v) or not (v == 0 or MIN_MS <= v <= MAX_MS)):
                raise ValueError(
                    f"'{name}' must be 0 or a number of milliseconds from {MIN_MS:g} to {MAX_MS:g}"
                )

    @property
    def qps(self) -> float:
        """Successful responses per second."""
        return max(0, self.requests - self.failures) / self.seconds if self.seconds > 0 else 0.0

    @property
    def error_rate(self) -> float:
        return self.failures / self.requests if self.requests else 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> LoadFigures:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in d.items() if k in names})


# --- parsers -------------------------------------------------------------------------------

_JSON_PREFIX = "diagnose-load:"


def _num(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    return float(v)


def figures_from_json(d: dict[str, Any], tool: str) -> LoadFigures:
    """The contract: ``requests`` and ``seconds`` (or ``duration_s``) are required;
    ``failures``, ``p50_ms``, ``p95_ms``, ``p99_ms``, ``mean_ms``, ``max_ms`` optional."""
    seconds = _num(d.get("seconds", d.get("duration_s")))
    requests = _num(d.get("requests"))
    if seconds is None or requests is None or seconds <= 0 or requests < 0:
        raise ValueError("needs numbers 'requests' and 'seconds' (> 0)")
    known = {"requests", "seconds", "duration_s", "failures", "p50_ms", "p95_ms", "p99_ms",
             "mean_ms", "max_ms", "errors", "tool"}  # fmt: skip
    errors = d.get("errors")
    return LoadFigures(
        tool=str(d.get("tool") or tool)[:40],
        seconds=seconds,
        requests=_count(requests, "requests"),
        failures=_count(_num(d.get("failures")) or 0, "failures"),
        p50_ms=_num(d.get("p50_ms")),
        p95_ms=_num(d.get("p95_ms")),
        p99_ms=_num(d.get("p99_ms")),
        mean_ms=_num(d.get("mean_ms")),
        max_ms=_num(d.get("max_ms")),
        errors=[e for e in errors if isinstance(e, dict)][:10] if isinstance(errors, list) else [],
        extra={k: v for k, v in d.items() if k not in known and isinstance(v, (int, float, str))},
    )


def _count(v: float, name: str) -> int:
    if not math.isfinite(v) or abs(v) > MAX_REQUESTS:
        raise ValueError(f"'{name}' must be a whole number from 0 to {MAX_REQUESTS:g}")
    return int(v)


def parse_json_line(text: str, tool: str = "command") -> LoadFigures:
    """The last line of the output that is a JSON object (optionally after ``diagnose-load:``)."""
    for line in reversed(text.splitlines()):
        line = line.strip()
        if line.startswith(_JSON_PREFIX):
            line = line[len(_JSON_PREFIX) :].strip()
        if not line.startswith("{"):
            continue
        try:
            d = parse_json(line, "the JSON line")
        except BadBundle:
            continue
        if isinstance(d, dict) and "requests" in d:
            try:
                return figures_from_json(d, tool)
            except ValueError as exc:
                raise ValueError(f"its JSON line {exc}") from None
    raise ValueError("printed no JSON line with 'requests' and 'seconds'")


_UNITS_MS = {"us": 0.001, "ms": 1.0, "s": 1000.0, "m": 60_000.0, "h": 3_600_000.0}
_WRK_TOTAL = re.compile(r"^\s*(\d+) requests in ([\d.]+)(us|ms|s|m|h)\b", re.M)
_WRK_PCT = re.compile(r"^\s*(50|75|90|99)(?:\.0+)?%\s+([\d.]+)(us|ms|s|m)\s*$", re.M)
_WRK_LATENCY = re.compile(r"^\s*Latency\s+([\d.]+)(us|ms|s|m)\s+\S+\s+([\d.]+)(us|ms|s|m)", re.M)
_WRK_NON2XX = re.compile(r"Non-2xx or 3xx responses:\s*(\d+)")
_WRK_SOCKET = re.compile(r"Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)")


def parse_wrk(text: str) -> LoadFigures:
    """wrk's output: the line ``wrk_report.lua`` prints when present, else wrk's summary
    (``--latency`` for P50/P99; P95 only from the script)."""
    if _JSON_PREFIX in text:
        return parse_json_line(text, "wrk")
    total = _WRK_TOTAL.search(text)
    if not total:
        raise ValueError("no 'N requests in T' line: not wrk's output")
    seconds = float(total.group(2)) * _UNITS_MS[total.group(3)] / 1000
    pcts = {m.group(1): float(m.group(2)) * _UNITS_MS[m.group(3)] for m in _WRK_PCT.finditer(text)}
    mean = max_ = None
    lat = _WRK_LATENCY.search(text)
    if lat:
        mean = float(lat.group(1)) * _UNITS_MS[lat.group(2)]
        max_ = float(lat.group(3)) * _UNITS_MS[lat.group(4)]
    requests = int(total.group(1))
    non2xx = int(m.group(1)) if (m := _WRK_NON2XX.search(text)) else 0
    sock = [int(x) for x in m.groups()] if (m := _WRK_SOCKET.search(text)) else [0, 0, 0, 0]
    errors = []
    if non2xx:
        errors.append({"error": "non-2xx or 3xx responses", "count": non2xx})
    for name, n in zip(("connect", "read", "write", "timeout"), sock, strict=True):
        if n:
            errors.append({"error": f"socket {name} errors", "count": n})
    return LoadFigures(
        tool="wrk",
        seconds=seconds,
        requests=requests + sum(sock),
        failures=non2xx + sum(sock),
        p50_ms=pcts.get("50"),
        p99_ms=pcts.get("99"),
        mean_ms=mean,
        max_ms=max_,
        errors=errors,
    )


def parse_locust_window(d: dict[str, Any]) -> LoadFigures:
    """``window.json`` from locust_plugin.py."""
    f = figures_from_json(d, "locust")
    extra: dict[str, Any] = {
        k: d[k] for k in ("users_at_start", "users_at_end", "cpu_warning") if k in d
    }
    endpoints = d.get("endpoints")
    if isinstance(endpoints, list):
        extra["endpoints"] = endpoints[:20]
    return LoadFigures(**{**asdict(f), "extra": {**f.extra, **extra}})


def parse_locust_csv(text: str) -> LoadFigures:
    """locust's ``--csv PREFIX`` statistics, ``PREFIX_stats.csv``: its ``Aggregated`` row
    (every endpoint together). locust writes no window length: it is requests / (requests/s)."""
    try:
        rows = list(csv.DictReader(io.StringIO(text)))
    except csv.Error as exc:  # a field over the csv module's limit, a NUL byte
        raise ValueError(f"not a CSV file locust wrote: {exc}") from None
    row = next((r for r in rows if r.get("Name") == "Aggregated"), None)
    if row is None or "Request Count" not in row:
        raise ValueError("no 'Aggregated' row with a 'Request Count': not locust's _stats.csv")

    def num(key: str) -> float | None:
        try:
            v = float(row.get(key) or "")
        except ValueError:  # locust writes N/A where it has no requests
            return None
        return v if math.isfinite(v) else None

    requests, rps = num("Request Count"), num("Requests/s")
    if requests is None or rps is None or requests < 0:
        raise ValueError("its Aggregated row has no numbers for 'Request Count' and 'Requests/s'")
    return LoadFigures(
        tool="locust",
        seconds=requests / rps if rps > 0 else 0.0,
        requests=int(requests),
        failures=int(num("Failure Count") or 0),
        p50_ms=num("50%") if num("50%") is not None else num("Median Response Time"),
        p95_ms=num("95%"),
        p99_ms=num("99%"),
        mean_ms=num("Average Response Time"),
        max_ms=num("Max Response Time"),
    )


#: What :func:`read_stats_file` reads at most: a stats file is a few kilobytes.
STATS_FILE_LIMIT = 4 * 1024 * 1024


def read_stats_file(path: Path) -> LoadFigures:
    """A load generator's figures from a file, whichever of the formats above it is in:
    locust's ``_stats.csv``, locust's ``window.json`` from a sweep step, wrk's output, or
    any output whose last JSON line has ``requests`` and ``seconds`` (the samples' stats
    line, docs/sweep.md). Raises ``ValueError`` with a one-line reason."""
    with open(path, "rb") as fh:
        text = fh.read(STATS_FILE_LIMIT + 1).decode("utf-8", "replace")
    if len(text) > STATS_FILE_LIMIT:
        raise ValueError(f"larger than {STATS_FILE_LIMIT // (1024 * 1024)} MiB: not a stats file")
    head = text.lstrip().split("\n", 1)[0]
    if "Request Count" in head and "Name" in head:
        return parse_locust_csv(text)
    if _WRK_TOTAL.search(text):
        return parse_wrk(text)
    return parse_json_line(text, "load generator")


# --- the generator's own CPU ---------------------------------------------------------------


def _tree(pid: int) -> list[psutil.Process]:
    try:
        root = psutil.Process(pid)
        return [root, *root.children(recursive=True)]
    except psutil.Error:
        return []


def _thread_times(pid: int) -> dict[tuple[int, int], tuple[int, int]]:
    """(pid, tid) -> (ns on a CPU, ns waiting on a run queue) for the process tree."""
    out: dict[tuple[int, int], tuple[int, int]] = {}
    for proc in _tree(pid):
        for tid, (on, wait, _) in schedstats(proc.pid).items():
            out[(proc.pid, tid)] = (on, wait)
    return out


def _host_busy() -> tuple[float, float, float]:
    """The host's busy CPU seconds (hypervisor steal included), all of them, and steal."""
    t = psutil.cpu_times()
    idle = t.idle + getattr(t, "iowait", 0.0)
    total = sum(t)
    return total - idle, total, getattr(t, "steal", 0.0)


@dataclass
class CpuSample:
    at: float
    threads: dict[tuple[int, int], tuple[int, int]]
    host: tuple[float, float, float]  # busy (steal included), total, steal: CPU seconds


class CpuWatch:
    """The generator's CPU over one window: sampled at its start, every half second (so an
    exit just before the end still leaves a sample), and at its end, from a thread.

    ``launched``: the generator process was started at the window's start (a command, not a
    warmed-up locust): its start-up (interpreter, imports, blocked on a cold disk) is not
    load it could have sent, so it is left out of the busiest thread's shares; see
    :func:`generator_cpu`."""

    def __init__(self, pid: int, launched: bool = False) -> None:
        self.pid = pid
        self.launched = launched
        self.samples: list[CpuSample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _sample(self) -> CpuSample | None:
        threads = _thread_times(self.pid)
        if not threads:
            return None
        return CpuSample(time.monotonic(), threads, _host_busy())

    def _keep(self, s: CpuSample | None) -> bool:
        if s is not None:
            self.samples.append(s)
        return s is not None

    def start(self, window_s: float) -> None:
        self._keep(self._sample())
        deadline = time.monotonic() + window_s

        def run() -> None:
            while not self._stop.wait(min(0.5, max(0.0, deadline - time.monotonic()))):
                if not self._keep(self._sample()) or time.monotonic() >= deadline:
                    return

        self._thread = threading.Thread(target=run, name="diagnose-sweep-cpuwatch", daemon=True)
        self._thread.start()

    def result(self) -> dict[str, Any]:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(2)
        return generator_cpu(list(self.samples), self.launched)


def _shares(a: CpuSample, b: CpuSample, key: tuple[int, int]) -> tuple[float, float]:
    """(on-CPU, run-queue) shares of ``a``..``b`` for one thread (0 where it was not yet)."""
    span = b.at - a.at
    on0, wait0 = a.threads.get(key, (0, 0))
    on1, wait1 = b.threads.get(key, (on0, wait0))
    return max(0, on1 - on0) / 1e9 / span, max(0, wait1 - wait0) / 1e9 / span


def _stolen(a: CpuSample, b: CpuSample) -> float:
    """The share of the host's busy CPU time the hypervisor stole over ``a``..``b`` (at
    most 0.5). A thread's on-CPU time leaves out what was stolen from its vCPU while it ran
    (it was neither running nor queued then); steal falls on busy vCPUs only (an idle one
    halts): the share of busy time stolen is the share of its running time it lost."""
    busy = b.host[0] - a.host[0]
    return min(0.5, max(0.0, b.host[2] - a.host[2]) / busy) if busy > 0 else 0.0


def _demand(a: CpuSample, b: CpuSample, key: tuple[int, int], stolen: float) -> float:
    """How much of ``a``..``b`` one thread wanted a core: on a CPU (with what the
    hypervisor ``stolen`` from it while it ran) or queued for one."""
    on, waiting = _shares(a, b, key)
    return min(1.0, on / (1 - stolen) + waiting)


def _started(samples: list[CpuSample], key: tuple[int, int], stolen: float) -> int:
    """Index of the sample a freshly launched generator's thread began sending from: the
    start of its first interval at SATURATED_SHARE demand, when that interval began in the
    window's first half (a start-up is short; a thread that got there later was not
    saturated for most of the window and is measured over all of it); else 0."""
    half = samples[0].at + (samples[-1].at - samples[0].at) / 2
    for i in range(len(samples) - 1):
        if samples[i].at >= half:
            break
        if samples[i + 1].at - samples[i].at >= 0.1 and (
            _demand(samples[i], samples[i + 1], key, stolen) >= SATURATED_SHARE
        ):
            return i
    return 0


def generator_cpu(samples: list[CpuSample], launched: bool = False) -> dict[str, Any]:
    """cores (the tree's CPU / window), the busiest thread's on-CPU and run-queue shares,
    ``saturated``, and the host's busy share of all its CPUs over the same window.

    The busiest thread is the one that wanted a core most over the window. For a generator
    ``launched`` at the window's start its shares are measured from :func:`_started`, and
    ``startup_s`` says how much was left out. Its demand counts the time the hypervisor
    stole while it ran (``host_steal_share``, of the host's busy CPU time): in a CI run on
    a VM a spinning generator measured 0.83-0.88 on a CPU and 0.001 queued."""
    if len(samples) < 2 or samples[-1].at - samples[0].at < 0.2:
        return {"measured": False, "saturated": False}
    a, b = samples[0], samples[-1]
    span = b.at - a.at
    busiest = max(b.threads, key=lambda k: sum(_shares(a, b, k)))
    stolen = _stolen(a, b)
    first = _started(samples, busiest, stolen) if launched else 0
    on, waiting = _shares(samples[first], b, busiest)
    demand = _demand(samples[first], b, busiest, stolen)
    on_total = sum(max(0, on1 - a.threads.get(k, (0, 0))[0]) for k, (on1, _) in b.threads.items())
    busy0, total0, _ = a.host
    busy1, total1, _ = b.host
    host = (busy1 - busy0) / (total1 - total0) if total1 > total0 else None
    return {
        "measured": True,
        "seconds": round(span, 3),
        "startup_s": round(samples[first].at - a.at, 3),
        "cpu_cores": round(on_total / 1e9 / span, 3),
        "processes": len({pid for pid, _ in b.threads}),
        "threads": len(b.threads),
        "busiest_thread_oncpu": round(min(1.0, on), 3),
        "busiest_thread_waiting": round(min(1.0, waiting), 3),
        "busiest_thread_demand": round(demand, 3),
        "saturated": demand >= SATURATED_SHARE,
        "host_busy_share": None if host is None else round(host, 3),
        "host_steal_share": round(stolen, 3),
    }


# --- drivers -------------------------------------------------------------------------------


def _last_line(path: Path, limit: int = 300) -> str:
    try:
        data = path.read_bytes()[-8192:].decode("utf-8", "replace")
    except OSError:
        return ""
    lines = [ln.strip() for ln in data.splitlines() if ln.strip()]
    return lines[-1][:limit] if lines else ""


class RunningLoad(ABC):
    """One step's load: started by a driver, measured, then stopped (always)."""

    def __init__(self, load_dir: Path, window_s: float) -> None:
        self.load_dir = load_dir
        self.window_s = window_s
        self.proc: LaunchedCommand | None = None

    #: :meth:`go` starts the generator's process (its start-up falls inside the window)
    launched_at_go = False

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc is not None else None

    @abstractmethod
    def wait_warm(self, timeout: float) -> None:
        """Block until the warm-up is over and the load waits for :meth:`go`."""

    @abstractmethod
    def go(self) -> float:
        """Start the measured window (the capture's collectors are up); its wall-clock start."""

    @abstractmethod
    def finish(self) -> LoadFigures:
        """Wait for the figures of the window (bounded) and return them."""

    def _launch(self, argv: Sequence[str], name: str, env: dict[str, str] | None = None) -> None:
        out = (self.load_dir / f"{name}.out").open("wb")
        err = (self.load_dir / f"{name}.err").open("wb")
        try:
            # paths into the sweep directory are /proc/self/fd/N/...: the generator gets
            # descriptor N under the same number, so they reach the same directory
            fds = anchored_fds([*argv, *(env or {}).values()])
            self.proc = LaunchedCommand(
                argv, stdout=out, stderr=err, env=env, cwd=os.getcwd(), pass_fds=fds
            )
        except DiagnoseError as exc:
            raise LoadGeneratorError(f"the load generator {exc}") from None
        finally:
            out.close()
            err.close()

    def _wait_exit(self, timeout: float) -> tuple[int | None, str | None] | None:
        deadline = time.monotonic() + timeout
        while self.proc is not None:
            st = self.proc.status()
            if st is not None or time.monotonic() >= deadline:
                return st
            time.sleep(0.05)
        return None

    def stop(self) -> dict[str, Any] | None:
        """Stop the generator's whole process group if it still runs; how it ended."""
        if self.proc is None:
            return None
        proc, self.proc = self.proc, None
        exit_ = proc.stop(grace=3.0, capture_ended=True)
        return {
            "exit_code": exit_.exit_code,
            "signal": exit_.signal,
            "stopped_by": exit_.stopped_by,
        }


def describe_exit(st: tuple[int | None, str | None]) -> str:
    code, sig = st
    return f"exited with code {code}" if sig is None else f"was killed by {sig}"


class LocustRun(RunningLoad):
    def wait_warm(self, timeout: float) -> None:
        marker = self.load_dir / "warm.json"
        deadline = time.monotonic() + timeout
        while not marker.is_file():
            st = self.proc.status() if self.proc is not None else (None, "SIGKILL")
            if st is not None:
                raise StepFailed(
                    f"locust {describe_exit(st)} before its measured window: "
                    f"{_last_line(self.load_dir / 'locust.err') or 'no output'}"
                )
            if time.monotonic() >= deadline:
                raise StepFailed(
                    f"locust was not warmed up within {timeout:.0f} s (its users never all "
                    f"started?); see {self.load_dir / 'locust.err'}"
                )
            time.sleep(0.05)

    def go(self) -> float:
        (self.load_dir / "go").touch()
        return time.time()

    def finish(self) -> LoadFigures:
        path = self.load_dir / "window.json"
        st = self._wait_exit(self.window_s + FINISH_SLACK_S)
        if not path.is_file():
            how = describe_exit(st) if st is not None else "did not end"
            raise StepFailed(
                f"locust {how} without the window's figures: "
                f"{_last_line(self.load_dir / 'locust.err') or 'no output'}"
            )
        try:
            return parse_locust_window(parse_json(path.read_bytes(), "window.json"))
        except (BadBundle, ValueError) as exc:
            raise StepFailed(f"locust's window.json is unreadable: {exc}") from None


class CommandRun(RunningLoad):
    def __init__(
        self, load_dir: Path, window_s: float, parser: str, tool: str, argv: list[str]
    ) -> None:
        super().__init__(load_dir, window_s)
        self.parser = parser
        self.tool = tool
        self.argv = argv

    launched_at_go = True

    def wait_warm(self, timeout: float) -> None:
        return None  # the warm-up run has ended when start() returns

    def go(self) -> float:
        self._launch(self.argv, "load")
        return time.time()

    def finish(self) -> LoadFigures:
        st = self._wait_exit(self.window_s + FINISH_SLACK_S)
        if st is None:
            raise StepFailed(
                f"the load command did not end {FINISH_SLACK_S:.0f} s after its "
                f"{self.window_s:g} s window (does it honour {{duration}}?)"
            )
        text = (self.load_dir / "load.out").read_text(encoding="utf-8", errors="replace")
        if st != (0, None):
            raise StepFailed(
                f"the load command {describe_exit(st)}: "
                f"{_last_line(self.load_dir / 'load.err') or _last_line(self.load_dir / 'load.out') or 'no output'}"
            )
        try:
            return parse_wrk(text) if self.parser == "wrk" else parse_json_line(text, self.tool)
        except ValueError as exc:
            raise StepFailed(f"cannot read the load command's figures: it {exc}") from None


class Driver(ABC):
    def __init__(self, spec: LoadSpec) -> None:
        self.spec = spec

    @property
    def tool(self) -> str:
        return self.spec.tool

    def window(self, seconds: float) -> float:
        """The window a step can measure when ``seconds`` are asked for."""
        return seconds

    @abstractmethod
    def start(self, users: int, load_dir: Path, warmup: float, window: float) -> RunningLoad:
        """Start the load (and warm up); the caller must ``stop()`` the result."""


def locust_command() -> list[str]:
    if importlib.util.find_spec("locust") is not None:
        return [sys.executable, "-m", "locust"]
    exe = shutil.which("locust")
    if exe:
        return [exe]
    raise LoadGeneratorError(
        "locust is not installed: pip install 'diagnose[load]' (or pip install locust)"
    )


class LocustDriver(Driver):
    def __init__(self, spec: LoadSpec) -> None:
        super().__init__(spec)
        self.command = locust_command()

    def start(self, users: int, load_dir: Path, warmup: float, window: float) -> RunningLoad:
        run = LocustRun(load_dir, window)
        argv = [
            *self.command,
            "-f",
            f"{self.spec.locustfile},{PLUGIN}",
            "--headless",
            "-u",
            str(users),
            "-r",
            str(users),  # all users within about a second; the warm-up absorbs the ramp
            "-t",
            f"{int(warmup + window + 60)}s",  # a bound of its own; the plugin ends it sooner
            "--only-summary",
            "--exit-code-on-error",
            "0",
            "--csv",
            str(load_dir / "locust"),
        ]
        if self.spec.host:
            argv += ["--host", self.spec.host]
        env = {
            **os.environ,
            "DIAGNOSE_SWEEP_DIR": str(load_dir),
            "DIAGNOSE_SWEEP_WARMUP": f"{warmup:g}",
            "DIAGNOSE_SWEEP_WINDOW": f"{window:g}",
            "PYTHONUNBUFFERED": "1",
        }
        run._launch(argv, "locust", env)
        return run


class CommandDriver(Driver):
    def __init__(self, spec: LoadSpec) -> None:
        super().__init__(spec)
        exe = spec.template[0]
        if not (shutil.which(exe) or (os.sep in exe and os.access(exe, os.X_OK))):
            hint = " (apt-get install wrk)" if Path(exe).name == "wrk" else ""
            raise LoadGeneratorError(f"the load generator {exe!r} is not on PATH{hint}")
        is_wrk = Path(exe).name == "wrk"
        self.parser = spec.parser if spec.parser != "auto" else ("wrk" if is_wrk else "json")
        self.template = list(spec.template)
        has_script = any(
            a in ("-s", "--script") or a.startswith("--script=") for a in self.template
        )
        if is_wrk and not has_script:
            # wrk's own summary has no P95: its Lua done() hook prints every figure we need
            self.template[1:1] = ["-s", str(WRK_SCRIPT)]

    def window(self, seconds: float) -> float:
        return float(whole_seconds(seconds))

    def argv(self, users: int, seconds: float) -> list[str]:
        return fill_template(
            self.template,
            {
                "users": str(users),
                "duration": str(whole_seconds(seconds)),
                "host": self.spec.host or "",
            },
        )

    def start(self, users: int, load_dir: Path, warmup: float, window: float) -> RunningLoad:
        run = CommandRun(
            load_dir, self.window(window), self.parser, self.tool, self.argv(users, window)
        )
        if warmup >= 0.5:
            run._launch(self.argv(users, warmup), "warmup")
            try:
                st = run._wait_exit(whole_seconds(warmup) + FINISH_SLACK_S)
                if st is None:
                    raise StepFailed("the load command's warm-up run did not end in time")
                if st != (0, None):
                    raise StepFailed(
                        f"the load command {describe_exit(st)} during the warm-up: "
                        f"{_last_line(load_dir / 'warmup.err') or _last_line(load_dir / 'warmup.out') or 'no output'}"
                    )
            finally:
                run.stop()
        return run


def make_driver(spec: LoadSpec) -> Driver:
    """The driver for ``spec``; raises LoadGeneratorError (exit code 10) if the tool is missing."""
    return LocustDriver(spec) if spec.kind == "locust" else CommandDriver(spec)
