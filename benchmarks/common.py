"""What every benchmark shares: the machine it ran on, sample services, medians and ranges.

Benchmarks are measurements, not tests: nothing here asserts a timing. Every figure is a
median over repetitions with its range, and comparisons are measured side by side in one
run, alternating the variants, so that drift of the host spreads evenly over them.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "samples"
PYTHON = sys.executable
DIAGNOSE = [PYTHON, "-m", "diagnose"]
RESULTS = Path(os.environ.get("BENCH_RESULTS", "/tmp/diagnose-bench"))


def loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _version(argv: Sequence[str]) -> str:
    try:
        out = subprocess.run(argv, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return "not found"
    return out.strip().splitlines()[0] if out.strip() else "not found"


def machine() -> dict[str, Any]:
    """The host, as the docs quote it: CPU model, cores, kernel, tool versions, load."""
    model = ""
    with contextlib.suppress(OSError):
        m = re.search(r"^model name\s*:\s*(.*)$", Path("/proc/cpuinfo").read_text(), re.M)
        model = m.group(1) if m else ""
    virt = _version(["systemd-detect-virt"]) if shutil.which("systemd-detect-virt") else ""
    pyspy = shutil.which("py-spy", path=str(Path(PYTHON).parent)) or shutil.which("py-spy")
    return {
        "cpu": model,
        "nproc": os.cpu_count(),
        "usable_cpus": len(os.sched_getaffinity(0)),
        "kernel": platform.release(),
        "virtualisation": virt,
        "python": platform.python_version(),
        "py-spy": _version([pyspy, "--version"]) if pyspy else "not found",
        "perf": _version(["perf", "--version"]),
        "mem_gib": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
        "loadavg": loadavg(),
    }


def machine_line() -> str:
    m = machine()
    return (
        f"{m['cpu']}, {m['nproc']} CPUs ({m['virtualisation'] or 'bare metal?'}), "
        f"kernel {m['kernel']}, Python {m['python']}, {m['py-spy']}, {m['perf']}, "
        f"{m['mem_gib']} GiB; load average {m['loadavg']}"
    )


@dataclass
class Stat:
    median: float
    lo: float
    hi: float
    n: int

    def fmt(self, spec: str = ".1f", unit: str = "") -> str:
        return f"{self.median:{spec}}{unit} ({self.lo:{spec}} to {self.hi:{spec}})"


def stat(values: Sequence[float]) -> Stat:
    vals = [v for v in values if v is not None]
    if not vals:
        return Stat(float("nan"), float("nan"), float("nan"), 0)
    return Stat(statistics.median(vals), min(vals), max(vals), len(vals))


def linear_fit(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float, float]:
    """Least squares ``y = slope * x + intercept``; returns (slope, intercept, r^2)."""
    slope, intercept = statistics.linear_regression(xs, ys)
    r = statistics.correlation(xs, ys) if len(set(xs)) > 1 and len(set(ys)) > 1 else 1.0
    return slope, intercept, r * r


def results_file(name: str) -> Path:
    """A new JSON-lines file for one benchmark run's raw rows (kept out of the repository)."""
    RESULTS.mkdir(parents=True, exist_ok=True)
    return RESULTS / f"{name}-{time.strftime('%Y%m%d-%H%M%S')}.jsonl"


def append_row(path: Path, row: dict[str, Any]) -> None:
    with path.open("a") as f:
        f.write(json.dumps(row) + "\n")


def sample_argv(sample: str, args: Sequence[str] = ()) -> list[str]:
    return [PYTHON, str(SAMPLES / f"{sample}.py"), *args]


class Service:
    """A sample service started in its own session (as a real service runs), always stopped.

    ``timestamps`` receives the end time of every request (``--timestamps``), so the
    throughput inside any window can be counted afterwards (:meth:`rps`).
    """

    def __init__(self, sample: str, args: Sequence[str], timestamps: Path, seconds: float):
        self.timestamps = timestamps
        self.argv = sample_argv(
            sample, [*args, "--seconds", str(seconds), "--timestamps", str(timestamps)]
        )
        self.proc: subprocess.Popen[str] | None = None
        self.stats: dict[str, Any] = {}
        self.ends: list[float] = []

    def __enter__(self) -> Service:
        self.timestamps.unlink(missing_ok=True)
        self.proc = subprocess.Popen(
            self.argv,
            cwd=SAMPLES,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            start_new_session=True,
        )
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self, timeout: float = 30) -> None:
        """SIGTERM (the sample prints its stats and writes its timestamps), then read both."""
        assert self.proc is not None
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        out, _ = self.proc.communicate(timeout=timeout)
        lines = [line for line in out.splitlines() if line.startswith("{")]
        self.stats = json.loads(lines[-1]) if lines else {}
        if self.timestamps.exists():
            self.ends = [float(x) for x in self.timestamps.read_text().split()]
            self.timestamps.unlink()

    def rps(self, t0: float, t1: float) -> float:
        """Requests completed per second in [t0, t1) (``time.monotonic()`` times)."""
        n = sum(1 for t in self.ends if t0 <= t < t1)
        return n / (t1 - t0) if t1 > t0 else float("nan")

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
            with contextlib.suppress(Exception):
                self.proc.communicate(timeout=10)
        self.timestamps.unlink(missing_ok=True)


TICK = os.sysconf("SC_CLK_TCK")


def host_busy_s() -> float:
    """CPU seconds the whole host has been busy (all CPUs, /proc/stat), for noise checks."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    return (sum(fields[:8]) - idle) / TICK


def process_cpu_s(pid: int) -> float:
    """user + system CPU seconds of a process (all its threads) so far; 0 if it is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0.0
    fields = stat.rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def thread_count(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


#: Runs a command and writes its tree's rusage. It exists because Linux keeps a process's
#: peak RSS across fork and exec: a command started straight from a benchmark that has
#: loaded a big bundle would report the benchmark's own peak. Forked from this small
#: interpreter, the command starts from about 10 MB.
_RUSAGE_WRAPPER = """
import json, os, resource, signal, sys
out, argv = sys.argv[1], sys.argv[2:]
signal.signal(signal.SIGTERM, signal.SIG_DFL)
pid = os.fork()
if pid == 0:
    try:
        os.execvp(argv[0], argv)
    finally:
        os._exit(127)
_, status = os.waitpid(pid, 0)
ru = resource.getrusage(resource.RUSAGE_CHILDREN)
with open(out, "w") as f:
    json.dump({"cpu_s": ru.ru_utime + ru.ru_stime, "maxrss_kib": ru.ru_maxrss}, f)
code = os.waitstatus_to_exitcode(status)
sys.exit(code if code >= 0 else 128 - code)
"""


def run_timed(argv: Sequence[str], timeout: float) -> tuple[int, float, float, int]:
    """Run ``argv`` in its own session; (exit code, wall s, CPU s of its tree, peak RSS KiB).

    The CPU time and the peak RSS are those of the command and every child it waited for
    (py-spy, perf; the peak is the largest single process), measured by a small wrapper
    (:data:`_RUSAGE_WRAPPER`) so that this process's own memory does not leak into them.
    """
    with tempfile.NamedTemporaryFile(prefix="bench-rusage-", suffix=".json") as ru:
        t = time.monotonic()
        proc = subprocess.Popen(
            [sys.executable, "-S", "-c", _RUSAGE_WRAPPER, ru.name, *argv],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        try:
            proc.wait(timeout=timeout)
        except BaseException:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            raise
        wall = time.monotonic() - t
        usage = json.loads(Path(ru.name).read_text() or '{"cpu_s": 0, "maxrss_kib": 0}')
    return proc.returncode, wall, usage["cpu_s"], usage["maxrss_kib"]


def attach(
    pid: int, seconds: float, out: Path, timeout: float, extra: Sequence[str] = ()
) -> tuple[int, float, Any]:
    """``diagnose attach PID`` at its defaults (plus ``extra`` options) into ``out`` (emptied
    first).

    Returns (exit code, wall seconds, the parsed report.json, or None if none was written).
    """
    shutil.rmtree(out, ignore_errors=True)
    argv = [*DIAGNOSE, "attach", str(pid), "-d", f"{seconds:g}", "-o", str(out), *extra]
    rc, wall, _, _ = run_timed(argv, timeout=timeout)
    report = out / "report.json"
    return rc, wall, json.loads(report.read_text()) if report.exists() else None


@contextlib.contextmanager
def quiet_check(label: str) -> Iterator[None]:
    """Print the load average before and after a benchmark step (the doc records it)."""
    print(f"# {label}: load average before {loadavg()}", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        print(f"# {label}: load average after {loadavg()}", file=sys.stderr, flush=True)
