"""What perf can do on this host, found by trying it, each answer with its reason and fix.

Each feature is checked by running the smallest real perf command that needs it (a
``perf record`` of ``true`` with the events a collector will use, ``perf stat`` for the
hardware counters, ``perf c2c record`` for memory sampling), all at once. ``--no-bpf-event``
matters: without it every ``perf record`` waits up to a second at exit for its BPF
side-band thread.

Each ``perf record`` reads ``/proc/kallsyms`` twice before it does anything (0.15 s of
system CPU here), so the seven checks together cost about 1 CPU-second and took 1.7-2.6 s
of wall time on this 2-core host while others used it: longer than a short capture's
window. So the result is kept (:func:`cached_probe`) in a file private to the user, per
boot, perf binary, kernel, user and ``perf_event_paranoid``, for at most
:data:`CACHE_MAX_AGE` seconds; a capture starts the probe (or reads the cache) in the
background the moment it starts (:func:`prefetch`), and ``diagnose doctor`` always probes
afresh and refreshes the cache. What a cached answer says is still a measurement of this
host, with its age (``cached_s``) in the bundle.

The probe never raises: a check that cannot run is a feature that does not work, with
the reason. Collectors ask :func:`capabilities_for` (probed once per capture).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any

from diagnose.bundle.safedir import SafeDir, write_all
from diagnose.formats.perf_regs import USER_REGS_OPTION
from diagnose.formats.perf_stat import parse_stat
from diagnose.resources import cache_dir
from diagnose.spawn import spawn

PERF_INSTALL = (
    "install perf: apt-get install -y linux-perf (Debian), linux-tools-$(uname -r) (Ubuntu), "
    "dnf install perf (Fedora/RHEL)"
)
PMU_FIX = (
    "no hardware PMU is visible (typical of VMs and containers on shared hosts): run on bare "
    "metal or a VM with a virtual PMU (KVM: -cpu host,pmu=on; cloud: a metal instance)"
)
MEM_FIX = (
    "needs hardware memory sampling (Intel PEBS load latency, AMD IBS on Zen 4 and later, "
    "Arm SPE), which VMs rarely expose: run on bare metal"
)
TRACEFS_FIX = (
    "run as root, or make tracefs readable: mount -o remount,mode=755 /sys/kernel/tracing "
    "(mount -t tracefs nodev /sys/kernel/tracing if it is not mounted)"
)
PERM_FIX = (
    "run as root, or give diagnose CAP_PERFMON (Linux 5.8+; CAP_SYS_ADMIN before) and "
    "CAP_SYS_PTRACE, or lower sysctl kernel.perf_event_paranoid (1 for sampling, -1 for "
    "tracepoints of other users' processes); in a container also allow perf_event_open in "
    "seccomp (docker run --cap-add PERFMON --cap-add SYS_PTRACE --security-opt "
    "seccomp=unconfined, or Kubernetes securityContext.capabilities.add)"
)

#: feature -> what it is for (doctor prints it)
FEATURES: dict[str, str] = {
    "cpu_clock": "cpu-clock sampling with call graphs: native on-CPU stacks (collector perf)",
    "sched_tracepoints": "sched_switch/sched_wakeup tracepoints and switch events: "
    "run-queue delay, off-CPU stacks (collector perf_sched)",
    "futex_tracepoints": "futex syscall tracepoints: lock-wait stacks per lock address "
    "(collector perf_sched)",
    "hw_events": "hardware counters cycles and instructions: IPC (collector perf_stat)",
    "mem_sampling": "memory sampling for perf c2c: false sharing (collector c2c)",
    "user_regs": "cpu-clock samples with user registers: cache lines written by several "
    "threads, without a PMU (collector false_sharing)",
    "delay": "perf record -D: perf starts with its events off and says when it turns them "
    "on, so the capture window opens only once perf records (every perf collector)",
}

SCHED_EVENTS = ("sched:sched_switch", "sched:sched_wakeup")
#: what ``perf record -D`` prints on stderr once its events are on (it has attached)
EVENTS_ON = "Events enabled"
FUTEX_EVENTS = ("syscalls:sys_enter_futex", "syscalls:sys_exit_futex")
HW_EVENTS = ("cycles", "instructions")
RECORD_BASE = ("record", "--no-bpf-event", "-N", "-B", "-k", "CLOCK_MONOTONIC")


@dataclass(frozen=True)
class Feature:
    name: str
    ok: bool
    detail: str = ""  # what was found, or why it does not work
    fix: str = ""  # how to get it, when it does not work

    def reason(self) -> str:
        return f"{self.detail}; fix: {self.fix}" if self.fix else self.detail

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d.pop("name")
        return d | {"for": FEATURES.get(self.name, "")}


@dataclass(frozen=True)
class PerfCapabilities:
    perf: str | None  # the perf binary, None when missing
    version: str
    paranoid: int | None  # kernel.perf_event_paranoid
    root: bool
    features: dict[str, Feature] = field(default_factory=dict)
    probe_s: float = 0.0
    cached_s: float | None = None  # age of the cached probe this came from; None: probed now

    def has(self, name: str) -> bool:
        f = self.features.get(name)
        return f is not None and f.ok

    def reason(self, name: str) -> str:
        f = self.features.get(name)
        return f.reason() if f is not None else f"{name}: not probed"

    def to_dict(self) -> dict[str, Any]:
        return {
            "perf": self.perf,
            "version": self.version,
            "perf_event_paranoid": self.paranoid,
            "root": self.root,
            "probe_s": round(self.probe_s, 3),
            "cached_s": None if self.cached_s is None else round(self.cached_s, 1),
            "features": {n: f.to_dict() for n, f in self.features.items()},
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PerfCapabilities:
        """The inverse of :meth:`to_dict` (a cached probe); ValueError if it is not one."""
        feats = d.get("features")
        if not isinstance(feats, dict) or set(feats) != set(FEATURES):
            raise ValueError("not a probe of these features")
        features = {}
        for name, f in feats.items():
            ok, detail, fix = f.get("ok"), f.get("detail"), f.get("fix")
            if not (isinstance(ok, bool) and isinstance(detail, str) and isinstance(fix, str)):
                raise ValueError(f"feature {name}: bad fields")
            features[name] = Feature(name, ok, detail, fix)
        perf, version, paranoid = d.get("perf"), d.get("version"), d.get("perf_event_paranoid")
        if not (perf is None or isinstance(perf, str)) or not isinstance(version, str):
            raise ValueError("bad perf or version")
        if not (paranoid is None or isinstance(paranoid, int)):
            raise ValueError("bad perf_event_paranoid")
        probe_s = d.get("probe_s")
        return cls(
            perf,
            version,
            paranoid,
            bool(d.get("root")),
            features,
            float(probe_s) if isinstance(probe_s, (int, float)) else 0.0,
        )


def find_perf() -> str | None:
    return shutil.which("perf")


def read_paranoid() -> int | None:
    try:
        with open("/proc/sys/kernel/perf_event_paranoid", encoding="ascii") as fh:
            return int(fh.read().strip())
    except (OSError, ValueError):
        return None


def explain(stderr: str, what: str) -> tuple[str, str]:
    """perf's error output -> (one-line reason, fix)."""
    low = stderr.lower()
    if "memory events not supported" in low or ("mem-loads" in low and "not supported" in low):
        return f"{what}: perf says memory events are not supported on this CPU", MEM_FIX
    if "can't access trace events" in low or "no permissions to read" in low:
        return f"{what}: no permission to read the tracepoints in tracefs", TRACEFS_FIX
    if "unknown tracepoint" in low or ("tracepoint" in low and "not found" in low):
        fix = (
            "the kernel lacks these tracepoints (syscall tracepoints need CONFIG_FTRACE_SYSCALLS=y) "
            "or tracefs is not mounted: mount -t tracefs nodev /sys/kernel/tracing"
        )
        return f"{what}: perf does not know these tracepoints", fix
    if (
        "perf_event_paranoid" in low
        or "permission" in low
        or "not permitted" in low
        or "access to performance monitoring" in low
    ):
        return f"{what}: not permitted to open perf events", PERM_FIX
    if "not supported" in low or "no such device" in low:
        return f"{what}: the event is not supported on this CPU", PMU_FIX
    if "perf not found for kernel" in low:
        return f"{what}: perf does not match the running kernel", PERF_INSTALL
    last = [ln.strip() for ln in stderr.splitlines() if ln.strip()]
    tail = last[-1][:200] if last else "no message"
    return (
        f"{what}: perf failed ({tail})",
        "run `perf record -e cpu-clock -- true` to see perf's error",
    )


def _stat_supported(output: str, events: tuple[str, ...]) -> tuple[bool, str]:
    """``perf stat -x,`` output: every event counted (no <not supported>/<not counted>)?"""
    rows = {r.event.split(":")[0]: r for r in parse_stat(output)}
    missing = [e for e in events if e not in rows or rows[e].value is None]
    if missing:
        states = {rows[e].status for e in missing if e in rows}
        return False, f"{', '.join(missing)}: {'/'.join(sorted(states)) or 'not counted'}"
    return True, ", ".join(f"{e} counted" for e in events)


class _Job:
    """One probe command, run in the background."""

    def __init__(self, argv: list[str], cwd: str) -> None:
        self.argv = argv
        self.out = ""
        self.rc: int | None = None
        self.error = ""
        try:
            self.proc: subprocess.Popen[str] | None = spawn(
                argv,
                death_signal=signal.SIGKILL,  # a probe's result dies with diagnose
                cwd=cwd,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
                errors="replace",
            )
        except OSError as exc:
            self.proc = None
            self.error = f"cannot run {argv[0]}: {exc.strerror or exc}"

    def wait(self, deadline: float) -> None:
        if self.proc is None:
            return
        try:
            self.out, _ = self.proc.communicate(timeout=max(0.05, deadline - time.monotonic()))
            self.rc = self.proc.returncode
        except subprocess.TimeoutExpired:
            self.proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.out, _ = self.proc.communicate(timeout=2)
            self.error = "timed out"


def _record_ok(job: _Job, data: str, what: str) -> Feature | tuple[str, str]:
    if job.error:
        return f"{what}: {job.error}", "check that perf runs: perf record -e cpu-clock -- true"
    if job.rc == 0 and os.path.isfile(data):
        return Feature("", True)
    return explain(job.out, what)


def _hw_feature(hw: _Job) -> Feature:
    """Hardware counters, from ``perf stat -e HW_EVENTS -- true``."""
    if hw.error:
        return Feature("hw_events", False, f"hardware counters: {hw.error}", PMU_FIX)
    if hw.rc != 0:
        reason, fix = explain(hw.out, "hardware counters")
        return Feature("hw_events", False, reason, fix)
    ok, detail = _stat_supported(hw.out, HW_EVENTS)
    if ok:
        return Feature("hw_events", True, detail, "")
    return Feature("hw_events", False, f"hardware counters: {detail}", PMU_FIX)


def probe(perf: str | None = None, timeout: float = 10.0) -> PerfCapabilities:
    """Probe this host's perf. Never raises."""
    t0 = time.monotonic()
    root = os.geteuid() == 0
    paranoid = read_paranoid()
    perf = perf or find_perf()
    if perf is None:
        missing = {
            n: Feature(n, False, "perf is not installed (not on PATH)", PERF_INSTALL)
            for n in FEATURES
        }
        return PerfCapabilities(None, "", paranoid, root, missing, time.monotonic() - t0)
    features: dict[str, Feature] = {}
    version = ""
    with tempfile.TemporaryDirectory(prefix="diagnose-perf-probe-") as tmp:
        kinds = ("cpu", "sched", "futex", "c2c", "regs", "delay")
        out = {k: os.path.join(tmp, f"{k}.data") for k in kinds}

        def record(data: str, *events: str) -> _Job:
            return _Job([perf, *RECORD_BASE, *events, "-o", data, "--", "true"], tmp)

        jobs = {
            "version": _Job([perf, "--version"], tmp),
            "cpu_clock": record(out["cpu"], "-e", "cpu-clock", "-F", "99", "-g"),
            "sched_tracepoints": record(out["sched"], "--switch-events", *_events(SCHED_EVENTS)),
            "futex_tracepoints": record(out["futex"], *_events(FUTEX_EVENTS)),
            "hw_events": _Job(
                [perf, "stat", "-x", ",", "-e", ",".join(HW_EVENTS), "--", "true"], tmp
            ),
            "mem_sampling": _Job([perf, "c2c", "record", "-o", out["c2c"], "--", "true"], tmp),
            "user_regs": record(out["regs"], "-e", "cpu-clock", "-F", "99", USER_REGS_OPTION),
            "delay": record(out["delay"], "-e", "cpu-clock", "-D", "1", "--sample-cpu"),
        }
        deadline = time.monotonic() + timeout
        for job in jobs.values():
            job.wait(deadline)
        vjob = jobs["version"]
        m = re.search(r"perf version (\S+)", vjob.out)
        version = m.group(1) if m else ""
        if not version:
            why = vjob.error or (vjob.out.strip().splitlines() or ["no output"])[-1][:200]
            broken = Feature("", False, f"perf does not run ({why})", PERF_INSTALL)
            features = {n: Feature(n, False, broken.detail, broken.fix) for n in FEATURES}
            return PerfCapabilities(perf, "", paranoid, root, features, time.monotonic() - t0)
        for name, data, what in (
            ("cpu_clock", out["cpu"], "cpu-clock sampling with call graphs"),
            ("sched_tracepoints", out["sched"], "scheduler tracepoints"),
            ("futex_tracepoints", out["futex"], "futex syscall tracepoints"),
            ("mem_sampling", out["c2c"], "perf c2c memory sampling"),
            ("user_regs", out["regs"], "cpu-clock sampling with user registers"),
            ("delay", out["delay"], "perf record -D, saying when its events are on"),
        ):
            res = _record_ok(jobs[name], data, what)
            if name == "delay" and isinstance(res, Feature) and EVENTS_ON not in jobs[name].out:
                res = (f"{what}: perf did not say {EVENTS_ON!r}", "a newer perf (5.x or later)")
            if isinstance(res, Feature):
                features[name] = Feature(name, True, f"{what}: works")
            else:
                features[name] = Feature(name, False, res[0], res[1])
        features["hw_events"] = _hw_feature(jobs["hw_events"])
    ordered = {n: features[n] for n in FEATURES if n in features}
    return PerfCapabilities(perf, version, paranoid, root, ordered, time.monotonic() - t0)


def _events(names: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for n in names:
        out += ["-e", n]
    return out


def unavailable_reason(caps: PerfCapabilities, feature: str) -> str | None:
    """Why a collector needing ``feature`` cannot run here (with the fix), or None."""
    if caps.perf is None or not caps.has(feature):
        return caps.reason(feature)
    return None


#: a cached probe older than this is probed again (capabilities change rarely within a
#: boot: a sysctl, a tracefs mount, a perf upgrade, which the key catches)
CACHE_MAX_AGE = 6 * 3600.0
CACHE_SCHEMA = "diagnose.perf_probe/2"  # bumped whenever a check changes


def cache_path() -> str:
    """``perf-probe.json`` in diagnose's cache (:func:`diagnose.resources.cache_dir`)."""
    return str(cache_dir() / "perf-probe.json")


def _cache_key(perf: str | None) -> dict[str, Any]:
    """What a cached probe must match: this boot, this perf binary, this kernel, this user
    and its privileges."""
    ident: list[int] = []
    if perf:
        with contextlib.suppress(OSError):
            st = os.stat(perf)
            ident = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns]
    boot = ""
    with contextlib.suppress(OSError), open("/proc/sys/kernel/random/boot_id") as fh:
        boot = fh.read().strip()
    caps = ""
    with contextlib.suppress(OSError), open("/proc/self/status") as fh:
        caps = next((ln.split()[1] for ln in fh if ln.startswith("CapEff:")), "")
    return {
        "schema": CACHE_SCHEMA,
        "perf": perf,
        "perf_file": ident,
        "boot_id": boot,
        "kernel": os.uname().release,
        "euid": os.geteuid(),
        "cap_eff": caps,
        "paranoid": read_paranoid(),
    }


#: a cached probe is a few KiB
CACHE_MAX_BYTES = 256 * 1024


def read_cache(perf: str | None, path: str | None = None) -> PerfCapabilities | None:
    """The cached probe for this host and user, if there is a fresh one (never raises). Read
    only from a directory of ours alone (:meth:`SafeDir.private`), never through a link."""
    path = path or cache_path()
    try:
        with SafeDir.private(os.path.dirname(path)) as held:
            raw = held.read_bytes(os.path.basename(path), limit=CACHE_MAX_BYTES + 1)
        if len(raw) > CACHE_MAX_BYTES:
            return None
        doc = json.loads(raw.decode("utf-8"))
        if not isinstance(doc, dict) or doc.get("key") != _cache_key(perf):
            return None
        age = time.time() - float(doc["written"])
        if not 0 <= age <= CACHE_MAX_AGE:
            return None
        caps = PerfCapabilities.from_dict(doc["caps"])
    except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, RecursionError):
        return None
    return dataclasses.replace(caps, cached_s=age)


def write_cache(caps: PerfCapabilities, path: str | None = None) -> None:
    """Keep ``caps`` for the next captures (best effort: a cache that cannot be written is
    no cache): 0600, replaced whole, in a 0700 directory of ours, never through a link."""
    path = path or cache_path()
    doc = {"key": _cache_key(caps.perf), "written": time.time(), "caps": caps.to_dict()}
    data = json.dumps(doc).encode("utf-8")
    with contextlib.suppress(OSError), SafeDir.private(os.path.dirname(path)) as held:
        held.write_atomic(os.path.basename(path), lambda fd: write_all(fd, data))


def cached_probe() -> PerfCapabilities:
    """The cached probe if there is a fresh one for this host and user, else a new probe
    (then cached). Never raises."""
    perf = find_perf()
    caps = read_cache(perf)
    if caps is not None:
        return caps
    try:
        caps = probe(perf)
    except Exception as exc:  # a failed probe never fails the capture
        why = f"the perf probe failed: {type(exc).__name__}: {exc}"
        fix = "run diagnose doctor to see what perf can do here"
        features = {n: Feature(n, False, why, fix) for n in FEATURES}
        return PerfCapabilities(perf, "", read_paranoid(), os.geteuid() == 0, features)
    if caps.version:  # a perf that does not run is not worth remembering
        write_cache(caps)
    return caps


_CACHE_LOCK = threading.Lock()
_CACHE: dict[object, Future[PerfCapabilities]] = {}


def prefetch(key: object) -> None:
    """Start finding the capabilities for the capture ``key`` in the background, so that
    the probe overlaps the capture's other start-up work."""
    with _CACHE_LOCK:
        if key in _CACHE:
            return
        _CACHE.clear()
        fut: Future[PerfCapabilities] = Future()
        _CACHE[key] = fut

    def run() -> None:
        try:
            fut.set_result(cached_probe())
        except BaseException as exc:  # cached_probe never raises; a bug must not hang
            fut.set_exception(exc)

    threading.Thread(target=run, name="diagnose-perf-probe", daemon=True).start()


def capabilities_for(key: object) -> PerfCapabilities:
    """The probe for the capture ``key`` (probed, or read from the cache, once)."""
    prefetch(key)
    with _CACHE_LOCK:
        fut = _CACHE[key]
    try:
        return fut.result(timeout=60)
    except Exception as exc:
        why = f"the perf probe failed: {type(exc).__name__}: {exc}"
        fix = "run diagnose doctor to see what perf can do here"
        features = {n: Feature(n, False, why, fix) for n in FEATURES}
        return PerfCapabilities(find_perf(), "", read_paranoid(), os.geteuid() == 0, features)
