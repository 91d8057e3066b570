"""The sample zoo: services on real serving stacks (samples/services/NAME/), run under locust.

Each sample's ``sample.toml`` says how to start the service, which PID a user would attach
to, how to load it, the verdict expected and the counterfactual: the one change that fixes
only that bottleneck. This module reads those descriptors and runs a sample: downstream
processes, the service, and locust, each in a session (process group) of its own (locust is
never a child of the service), always stopped at the end. Throughput comes from locust's own
stats (``--csv-full-history``: cumulative request counts once a second).

Used by ``python -m benchmarks counterfactual`` and ``accuracy`` and by the zoo's e2e tests.
"""

from __future__ import annotations

import contextlib
import csv
import os
import shutil
import signal
import socket
import subprocess
import time
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeVar

import psutil

from benchmarks.common import PYTHON, SAMPLES, process_cpu_s
from diagnose.tomlfile import tomllib

SERVICES = SAMPLES / "services"
LOCUSTFILE = SERVICES / "locustfile.py"
CHECKS = ("throughput", "io", "idle")


@dataclass(frozen=True)
class Change:
    """One variant of a sample: the environment, extra arguments and load it runs with."""

    name: str
    env: dict[str, str] = field(default_factory=dict)
    args: tuple[str, ...] = ()
    users: int | None = None
    category: str | None = None  # for an alternative fix: the bottleneck it removes
    kind: str | None = None
    why: str = ""


@dataclass(frozen=True)
class ZooSample:
    name: str
    dir: Path
    summary: str
    stack: str
    argv: tuple[str, ...]
    env: dict[str, str]
    attach: str
    ready_path: str
    downstream: tuple[tuple[str, ...], ...]
    load_path: str
    payload: str
    users: int
    wait: tuple[float, float]
    warmup_s: float
    expected_category: str
    expected_kinds: tuple[str, ...]
    expected_why: str
    fix: Change
    check: str
    alternatives: tuple[Change, ...]

    @property
    def expected(self) -> str:
        kinds = "|".join(self.expected_kinds)
        return f"{self.expected_category}/{kinds}" if kinds else self.expected_category


def _change(name: str, d: dict[str, Any]) -> Change:
    return Change(
        name=d.get("name", name),
        env={k: str(v) for k, v in d.get("env", {}).items()},
        args=tuple(d.get("args", ())),
        users=d.get("users"),
        category=d.get("category"),
        kind=d.get("kind"),
        why=d.get("why", ""),
    )


def load_sample(path: Path) -> ZooSample:
    """Read one ``sample.toml`` (the directory's name is the sample's name)."""
    d = tomllib.loads(path.read_text())
    svc, load, exp, cf = d["service"], d["load"], d["expected"], d["counterfactual"]
    kinds = exp.get("kinds", [exp["kind"]] if exp.get("kind") else [])
    check = cf.get("check", "throughput")
    if check not in CHECKS:
        raise ValueError(f"{path}: counterfactual.check must be one of {CHECKS}")
    return ZooSample(
        name=path.parent.name,
        dir=path.parent,
        summary=d["summary"],
        stack=d["stack"],
        argv=tuple(svc["argv"]),
        env={k: str(v) for k, v in svc.get("env", {}).items()},
        attach=svc.get("attach", "the process started"),
        ready_path=svc.get("ready_path", "/health"),
        downstream=tuple(tuple(a) for a in svc.get("downstream", ())),
        load_path=load.get("path", "/predict"),
        payload=load.get("payload", ""),
        users=int(load["users"]),
        wait=tuple(load.get("wait", (0.0, 0.0))),  # type: ignore[arg-type]
        warmup_s=float(load.get("warmup_s", 5.0)),
        expected_category=exp["category"],
        expected_kinds=tuple(kinds),
        expected_why=exp.get("why", ""),
        fix=_change("fix", cf),
        check=check,
        alternatives=tuple(_change(f"alt{i}", a) for i, a in enumerate(d.get("alternative", []))),
    )


def all_samples() -> list[ZooSample]:
    return [load_sample(p) for p in sorted(SERVICES.glob("*/sample.toml"))]


class _Named(Protocol):
    name: str


N = TypeVar("N", bound=_Named)


def pick(items: list[N], names: list[str]) -> list[N]:
    """The items named, in that order (all of them when no names are given)."""
    if not names:
        return items
    by_name = {s.name: s for s in items}
    missing = [n for n in names if n not in by_name]
    if missing:
        raise SystemExit(f"no sample named {', '.join(missing)}; have: {', '.join(by_name)}")
    return [by_name[n] for n in names]


def select(names: list[str]) -> list[ZooSample]:
    return pick(all_samples(), names)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _fill(argv: tuple[str, ...], ports: dict[str, str]) -> list[str]:
    return [a.format(python=PYTHON, services=str(SERVICES), **ports) for a in argv]


def _stop_group(proc: subprocess.Popen[bytes], grace: float = 5.0) -> None:
    """SIGTERM the process group, then SIGKILL whatever is left of it."""
    if proc.poll() is None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(grace)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(10)


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its living children (a pre-fork server's workers)."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return 0.0
    return process_cpu_s(pid) + sum(process_cpu_s(k.pid) for k in kids)


@dataclass
class Running:
    sample: ZooSample
    proc: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def pid(self) -> int:
        """The PID a user would attach to: the process the service's command started."""
        return self.proc.pid


def _env(sample: ZooSample, change: Change | None, ports: dict[str, str]) -> dict[str, str]:
    own = {**sample.env, **(change.env if change else {})}
    env = {**os.environ, **{k: v.format(**ports) for k, v in own.items()}}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(SERVICES), env.get("PYTHONPATH")) if p)
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _wait_ready(run: Running, timeout: float) -> None:
    url = f"http://127.0.0.1:{run.port}{run.sample.ready_path}"
    end = time.monotonic() + timeout
    while True:
        if run.proc.poll() is not None:
            tail = run.log.read_text(errors="replace")[-2000:] if run.log.exists() else ""
            raise RuntimeError(f"{run.sample.name} exited ({run.proc.returncode}):\n{tail}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        if time.monotonic() > end:
            raise RuntimeError(f"{run.sample.name} not ready after {timeout:.0f} s ({url})")
        time.sleep(0.25)


@contextlib.contextmanager
def running(
    sample: ZooSample, change: Change | None, workdir: Path, ready_timeout: float = 120
) -> Iterator[Running]:
    """Start the sample's downstream processes and service; stop all of them at the end."""
    workdir.mkdir(parents=True, exist_ok=True)
    ports = {"port": str(free_port()), "port2": str(free_port())}
    env = _env(sample, change, ports)
    procs: list[subprocess.Popen[bytes]] = []
    log = workdir / f"{sample.name}.log"
    try:
        for argv in sample.downstream:
            procs.append(_spawn(_fill(argv, ports), sample.dir, env, workdir / "downstream.log"))
        argv = [*_fill(sample.argv, ports), *(change.args if change else ())]
        svc = _spawn(argv, sample.dir, env, log)
        procs.append(svc)
        run = Running(sample, svc, int(ports["port"]), log)
        _wait_ready(run, ready_timeout)
        yield run
    finally:
        for p in reversed(procs):
            _stop_group(p)


def _spawn(argv: list[str], cwd: Path, env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        return subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # a service of its own: the kernel shares CPU by session
        )


def locust_binary() -> str:
    found = shutil.which("locust", path=str(Path(PYTHON).parent)) or shutil.which("locust")
    if not found:
        raise SystemExit("locust is not installed (pip install -e '.[samples]')")
    return found


@dataclass
class Load:
    """A headless locust run against a running sample, in a process group of its own."""

    proc: subprocess.Popen[bytes]
    csv_prefix: Path
    started: float

    def stop(self) -> None:
        _stop_group(self.proc, grace=10)


def start_load(
    run: Running, seconds: float, workdir: Path, users: int | None = None, tag: str = "load"
) -> Load:
    s = run.sample
    u = users or s.users
    prefix = workdir / tag
    for f in workdir.glob(f"{tag}_*.csv"):
        f.unlink()
    env = {
        **os.environ,
        "PYTHONPATH": str(SERVICES),
        "ZOO_PATH": s.load_path,
        "ZOO_PAYLOAD": s.payload,
        "ZOO_WAIT": f"{s.wait[0]},{s.wait[1]}",
    }
    argv = [
        locust_binary(),
        "-f",
        str(LOCUSTFILE),
        "--headless",
        "--host",
        f"http://127.0.0.1:{run.port}",
        "-u",
        str(u),
        "-r",
        str(u),
        "-t",
        f"{int(seconds)}s",
        "--csv",
        str(prefix),
        "--csv-full-history",
        "--only-summary",
        "--loglevel",
        "ERROR",
        "--stop-timeout",
        "2",
    ]
    proc = _spawn(argv, SERVICES, env, workdir / f"{tag}.log")
    return Load(proc, prefix, time.monotonic())


def locust_rps(prefix: Path, skip_s: float) -> dict[str, float]:
    """Successful requests/s and failures/s from locust's history, after the first ``skip_s`` seconds.

    The history has one 'Aggregated' row a second with cumulative counts; the rate is the
    difference between the first row at or after ``skip_s`` and the last row, over their
    time difference (so the ramp-up and the stop are left out).
    """
    path = Path(f"{prefix}_stats_history.csv")
    if not path.exists():
        return {"rps": float("nan"), "fail_rps": float("nan"), "seconds": 0.0}
    rows = [r for r in csv.DictReader(path.open()) if r.get("Name") == "Aggregated"]
    pts = [
        (int(r["Timestamp"]), int(r["Total Request Count"]), int(r["Total Failure Count"]))
        for r in rows
    ]
    if len(pts) < 2:
        return {"rps": float("nan"), "fail_rps": float("nan"), "seconds": 0.0}
    t0 = pts[0][0] + skip_s
    window = [p for p in pts if p[0] >= t0]
    if len(window) < 2:
        window = pts[-2:]
    (ta, na, fa), (tb, nb, fb) = window[0], window[-1]
    dt = max(tb - ta, 1)
    ok = (nb - fb) - (na - fa)
    return {"rps": ok / dt, "fail_rps": (fb - fa) / dt, "seconds": float(dt)}


def measure(
    sample: ZooSample,
    change: Change | None,
    workdir: Path,
    seconds: float,
    inspect: Callable[[Running], None] | None = None,
) -> dict[str, Any]:
    """Start the sample (with ``change``), load it for warm-up + ``seconds``, stop it.

    Returns locust's throughput over the measured window and the CPU (in cores) that the
    service's process tree and locust used over the same window. ``inspect`` is called with
    the running service after the warm-up (a test's look at its processes).
    """
    users = change.users if change and change.users else sample.users
    warm = sample.warmup_s
    with running(sample, change, workdir) as run:
        load = start_load(run, warm + seconds + 1, workdir, users=users)
        try:
            time.sleep(warm)
            if inspect is not None:
                inspect(run)
            c0, l0, t0 = tree_cpu_s(run.pid), tree_cpu_s(load.proc.pid), time.monotonic()
            time.sleep(seconds)
            c1, l1, t1 = tree_cpu_s(run.pid), tree_cpu_s(load.proc.pid), time.monotonic()
            load.proc.wait(timeout=30)
        finally:
            load.stop()
        stats = locust_rps(load.csv_prefix, skip_s=warm)
    dt = t1 - t0
    return {
        **stats,
        "users": users,
        "service_cores": (c1 - c0) / dt,
        "locust_cores": (l1 - l0) / dt,
    }
