"""``diagnose doctor [PID]``: what this host (and this target) lets each collector do.

Every answer is found by trying, not assumed: perf's features by the capability probe
(:mod:`diagnose.collect.perf.probe`), ptrace by reading the target's /proc/PID/syscall
(what py-spy and the /proc sampler need), py-spy's support for the target's Python by
``py-spy dump --nonblocking`` (it reads the interpreter's memory without stopping it),
perf's permission on the target by a 0.1 s ``perf stat -p PID``. Each missing piece comes
with its fix: the package to install, the capability to add to the container, the sysctl.

The result is a plain dict (``--json`` prints it); :func:`render_text` shows it on a
terminal, with everything the target controls (its name, its command line) made inert.
"""

from __future__ import annotations

import dataclasses
import os
import platform
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diagnose import __version__
from diagnose.collect.perf.probe import FEATURES, PerfCapabilities, explain, probe, write_cache
from diagnose.collect.pyspy import find_pyspy, pyspy_version
from diagnose.collect.system import cpu_capacity
from diagnose.collect.target import Target, check_trace_access, ptrace_help, resolve_target
from diagnose.errors import PermissionDenied
from diagnose.formats.pyspy import explain_failure
from diagnose.render.text import plain
from diagnose.spawn import run as spawn_run

CAPS = {19: "CAP_SYS_PTRACE", 21: "CAP_SYS_ADMIN", 38: "CAP_PERFMON"}
PYSPY_INSTALL = "pip install -U py-spy (in the environment diagnose runs from)"

#: collector -> the perf feature it needs
PERF_COLLECTORS = {
    "perf": "cpu_clock",
    "perf_sched": "sched_tracepoints",
    "perf_stat": "hw_events",
    "c2c": "mem_sampling",
    "false_sharing": "user_regs",
}


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: str = ""
    collectors: list[str] = field(default_factory=list)  # the collectors it decides
    #: collectors that do not apply to this target (py-spy on a process that is not Python):
    #: not a failure of the host, and not runnable either
    not_applicable: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def _read(path: str) -> str:
    p = Path(path)
    return p.read_text(encoding="utf-8", errors="replace") if os.access(p, os.R_OK) else ""


def effective_caps() -> list[str]:
    """Named capabilities diagnose holds (CapEff of /proc/self/status)."""
    m = re.search(r"^CapEff:\s*([0-9a-fA-F]+)", _read("/proc/self/status"), re.M)
    if not m:
        return []
    bits = int(m.group(1), 16)
    return [name for bit, name in CAPS.items() if bits >> bit & 1]


def in_container() -> bool:
    if os.path.exists("/.dockerenv") or os.path.exists("/run/.containerenv"):
        return True
    cg = _read("/proc/1/cgroup")
    return any(k in cg for k in ("docker", "kubepods", "containerd", "libpod"))


def host_section() -> dict[str, Any]:
    return {
        "hostname": platform.node(),
        "kernel": platform.release(),
        "arch": platform.machine(),
        "root": os.geteuid() == 0,
        "capabilities": effective_caps(),
        "container": in_container(),
        "ptrace_scope": _read("/proc/sys/kernel/yama/ptrace_scope").strip() or None,
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid").strip() or None,
        "diagnose": __version__,
    }


def _privilege_check(host: dict[str, Any]) -> Check:
    if host["root"]:
        return Check("privileges", True, "running as root")
    caps = host["capabilities"]
    if "CAP_SYS_PTRACE" in caps:
        return Check("privileges", True, f"not root, but holds {', '.join(caps)}")
    fix = (
        "run diagnose as root (sudo), or as the target's user; in a container add SYS_PTRACE "
        "(docker run --cap-add SYS_PTRACE; Kubernetes securityContext.capabilities.add: "
        "[SYS_PTRACE]) and PERFMON for perf"
    )
    return Check(
        "privileges", False, "not root and without CAP_SYS_PTRACE", fix, ["proc", "pyspy", "gil"]
    )


def _target_checks(target: Target, pyspy: str | None) -> list[Check]:
    checks = []
    try:
        check_trace_access(target.pid)
        checks.append(
            Check("ptrace", True, f"may read PID {target.pid}'s stacks and system calls",
                  collectors=["proc", "pyspy", "gil"])
        )  # fmt: skip
    except PermissionDenied:
        checks.append(Check("ptrace", False, f"not permitted to trace PID {target.pid}",
                            ptrace_help(target.pid).split(": ", 1)[-1], ["proc", "pyspy", "gil"]))  # fmt: skip
    if not target.is_python:
        checks.append(
            Check("python", True, f"PID {target.pid} is not a Python process: native stacks "
                  "come from perf; py-spy and the GIL collector do not apply",
                  not_applicable=["pyspy", "gil"])
        )  # fmt: skip
        return checks
    version = target.python_version or "?"
    if pyspy is None:
        checks.append(
            Check("py-spy", False, "py-spy is not installed", PYSPY_INSTALL, ["pyspy", "gil"])
        )
        return checks
    pv = pyspy_version(pyspy)
    try:
        res = spawn_run([pyspy, "dump", "--pid", str(target.pid), "--nonblocking"], timeout=20)
        ok, text = res.returncode == 0, res.stderr or res.stdout
    except (OSError, subprocess.SubprocessError) as exc:
        ok, text = False, str(exc)
    if ok:
        checks.append(Check("py-spy", True, f"py-spy {pv} reads Python {version} (py-spy dump worked)",
                            collectors=["pyspy", "gil"]))  # fmt: skip
    else:
        why = explain_failure(text, target.pid)
        fix = PYSPY_INSTALL if "does not look like" in why or "version" in text.lower() else ""
        if "not permitted" in why:
            fix = ptrace_help(target.pid).split(": ", 1)[-1]
        checks.append(Check("py-spy", False, f"py-spy {pv}, Python {version}: {why}",
                            fix or "see py-spy's message above", ["pyspy", "gil"]))  # fmt: skip
    return checks


def _perf_attach(caps: PerfCapabilities, pid: int) -> Check | None:
    if caps.perf is None or not caps.has("cpu_clock"):
        return None
    try:
        res = spawn_run(
            [caps.perf, "stat", "-x", ",", "-e", "cpu-clock", "-p", str(pid), "--", "sleep", "0.1"],
            timeout=15,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return Check("perf attach", False, f"perf could not run: {exc}", "", ["perf", "perf_sched"])
    if res.returncode == 0:
        return Check(
            "perf attach", True, f"perf may attach to PID {pid}", collectors=["perf", "perf_sched"]
        )
    reason, fix = explain(res.stderr, f"perf on PID {pid}")
    return Check("perf attach", False, reason, fix, ["perf", "perf_sched", "perf_stat", "c2c"])


def _perf_checks(caps: PerfCapabilities) -> list[Check]:
    if caps.perf is None:
        f = next(iter(caps.features.values()))
        return [Check("perf", False, f.detail, f.fix, list(PERF_COLLECTORS))]
    out = [Check("perf", bool(caps.version), f"perf {caps.version or '?'} at {caps.perf}")]
    for name, feature in caps.features.items():
        users = [c for c, f in PERF_COLLECTORS.items() if f == name]
        out.append(Check(f"perf {name}", feature.ok, feature.detail, feature.fix, users))
    return out


def _cpu_check(pid: int) -> tuple[Check, dict[str, Any]]:
    cap = cpu_capacity(pid)
    quota = cap.get("quota_cores")
    usable = cap.get("usable_cpus") or []
    limits = cap.get("limited_by") or []
    detail = (
        f"{len(usable)} usable CPUs, {cap.get('cores_available')} cores available"
        f" (cgroup {cap.get('cgroup_version')}"
        + (f", quota {quota:g} cores" if quota is not None else ", no CPU quota")
        + (f"; limited by {', '.join(limits)}" if limits else "")
        + ")"
    )
    return Check("cpu capacity", True, detail), cap


def _target_dict(target: Target) -> dict[str, Any]:
    keys = ("pid", "comm", "exe", "is_python", "python_version", "followed_from", "note")
    return {k: getattr(target, k) for k in keys}


def diagnose_host(pid: int | None = None) -> dict[str, Any]:
    """The doctor's findings as a JSON-ready dict. Raises TargetError if ``pid`` does not
    exist (exit code 3)."""
    target: Target | None = None
    checks: list[Check] = []
    if pid is not None:
        target = resolve_target(pid, follow_children=True)
    host = host_section()
    checks.append(_privilege_check(host))
    pyspy = find_pyspy()
    if target is not None:
        checks += _target_checks(target, pyspy)
    elif pyspy is None:
        checks.append(
            Check("py-spy", False, "py-spy is not installed", PYSPY_INSTALL, ["pyspy", "gil"])
        )
    else:
        checks.append(Check("py-spy", True, f"py-spy {pyspy_version(pyspy)} at {pyspy}"))
    caps = probe()  # always afresh; captures reuse it (perf/probe.py, cached_probe)
    if caps.version:
        write_cache(caps)
    checks += _perf_checks(caps)
    if target is not None:
        attach = _perf_attach(caps, target.pid)
        if attach is not None:
            checks.append(attach)
    cpu, capacity = _cpu_check(target.pid if target is not None else os.getpid())
    checks.append(cpu)
    blocked: dict[str, list[str]] = {}
    inapplicable: dict[str, str] = {}
    for c in checks:
        if not c.ok:
            for name in c.collectors:
                blocked.setdefault(name, []).append(c.detail)
        for name in c.not_applicable:
            inapplicable[name] = c.detail
    from diagnose.collect.registry import COLLECTORS

    collectors = {
        name: {
            "can_run": name not in blocked and name not in inapplicable,
            "applies": name not in inapplicable,
            "why_not": inapplicable.get(name) or "; ".join(blocked.get(name, [])),
        }
        for name in COLLECTORS
    }
    return {
        "schema": "diagnose.doctor/1",
        "host": host,
        "target": None if target is None else _target_dict(target),
        "checks": [c.to_dict() for c in checks],
        "perf": caps.to_dict(),
        "perf_features": dict(FEATURES),
        "cpu": capacity,
        "collectors": collectors,
    }


def render_text(report: dict[str, Any]) -> str:
    """The findings for a terminal: one line per check, its fix under each 'no'."""
    h = report["host"]
    who = (
        "root"
        if h["root"]
        else f"uid {os.geteuid()}"
        + (f" with {', '.join(h['capabilities'])}" if h["capabilities"] else "")
    )
    lines = [
        f"diagnose doctor {h['diagnose']}: {plain(h['hostname'], 80)}, Linux {plain(h['kernel'], 60)} "
        f"{h['arch']}, running as {who}" + (", in a container" if h["container"] else "")
    ]
    t = report.get("target")
    if t:
        what = f"Python {t['python_version']}" if t["is_python"] else "not Python"
        lines.append(f"Target: PID {t['pid']} ({plain(t['comm'], 40)}, {what})")
        if t.get("note"):
            lines.append(f"  {plain(t['note'], 300)}")
    for c in report["checks"]:
        mark = "ok" if c["ok"] else "no"
        lines.append(f"  [{mark}] {c['name']}: {plain(c['detail'], 300)}")
        if not c["ok"] and c["fix"]:
            lines.append(f"       fix: {plain(c['fix'], 600)}")
    collectors = report["collectors"].items()
    can = [n for n, v in collectors if v["can_run"]]
    cannot = [n for n, v in collectors if not v["can_run"] and v.get("applies", True)]
    moot = [n for n, v in collectors if not v.get("applies", True)]
    lines.append(f"Collectors that can run: {', '.join(can) or 'none'}")
    if cannot:
        lines.append(f"Collectors that cannot: {', '.join(cannot)}")
    if moot:
        lines.append(f"Collectors that do not apply to this target: {', '.join(moot)}")
    return "\n".join(lines)
