"""The system snapshot: what the target runs on and what it may use.

CPU topology, the CPU capacity really available to the target (affinity, cpuset, cgroup
v1/v2 quota), load, the Python version, the native libraries it loaded (from
/proc/PID/maps) and thread-pool settings from its environment, read through an allow-list:
never the whole environment, which is where secrets live.
"""

from __future__ import annotations

import contextlib
import functools
import glob
import itertools
import os
import platform
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import psutil

from diagnose import __version__
from diagnose.bundle.manifest import CollectorRecord, CollectorStatus
from diagnose.collect.base import CaptureContext, Collector
from diagnose.collect.mapped import open_regular
from diagnose.collect.perf.codebytes import parse_maps
from diagnose.collect.procfs import parse_cpu_list
from diagnose.collect.proctree import outbound_peers
from diagnose.collect.tasks import read_proc

#: Environment variables that configure thread pools, affinity and allocators. Only these
#: are ever read from the target's environment; values are cut to 200 characters.
ENV_ALLOW_LIST: tuple[str, ...] = (
    "OMP_NUM_THREADS",
    "OMP_THREAD_LIMIT",
    "OMP_DYNAMIC",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "OMP_WAIT_POLICY",
    "OMP_SCHEDULE",
    "GOMP_CPU_AFFINITY",
    "GOMP_SPINCOUNT",
    "KMP_AFFINITY",
    "KMP_BLOCKTIME",
    "KMP_HW_SUBSET",
    "MKL_NUM_THREADS",
    "MKL_DYNAMIC",
    "MKL_ENABLE_INSTRUCTIONS",
    "OPENBLAS_NUM_THREADS",
    "GOTO_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMEXPR_MAX_THREADS",
    "TF_NUM_INTRAOP_THREADS",
    "TF_NUM_INTEROP_THREADS",
    "TORCH_NUM_THREADS",
    "ORT_NUM_THREADS",
    "OPENVINO_NUM_THREADS",
    "RAYON_NUM_THREADS",
    "TOKENIZERS_PARALLELISM",
    "MALLOC_ARENA_MAX",
    "MALLOC_CONF",
    "PYTHONMALLOC",
    "PYTHONGIL",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "WEB_CONCURRENCY",
    "UVICORN_WORKERS",
    "GUNICORN_THREADS",
    "LD_PRELOAD",
)

#: Native libraries worth naming, by what they mean for threads and kernels.
LIBRARY_KINDS: tuple[tuple[str, str], ...] = (
    ("openmp", r"lib(gomp|iomp5|omp)[.-]"),
    ("blas", r"lib(openblas|scipy_openblas|mkl_\w+|blis|flexiblas|accelerate)[\w.-]*\.so"),
    ("onednn", r"lib(dnnl|mkldnn)[\w.-]*\.so"),
    ("onnxruntime", r"(libonnxruntime|onnxruntime_pybind11_state)[\w.-]*\.so"),
    ("libtorch", r"lib(torch_cpu|torch|c10)[\w.-]*\.so"),
    ("tensorflow", r"lib(tensorflow_framework|tensorflow_cc)[\w.-]*\.so"),
    ("openvino", r"libopenvino[\w.-]*\.so"),
    ("cuda", r"lib(cudart|cublas|cublasLt|cudnn|nccl|cuda)[\w.-]*\.so"),
    ("allocator", r"lib(jemalloc|tcmalloc|tcmalloc_minimal|mimalloc)[\w.-]*\.so"),
    ("tbb", r"libtbb[\w.-]*\.so"),
    ("numpy", r"_multiarray_umath[\w.-]*\.so"),
    ("python", r"libpython\d\.\d+[\w.-]*\.so"),
)


def cpu_topology() -> dict[str, Any]:
    logical = os.cpu_count() or 1
    physical = psutil.cpu_count(logical=False) or logical
    packages: set[str] = set()
    smt_siblings = 1
    for cpu_dir in glob.glob("/sys/devices/system/cpu/cpu[0-9]*"):
        pkg = read_proc(f"{cpu_dir}/topology/physical_package_id").strip()
        if pkg:
            packages.add(pkg)
        sib = read_proc(f"{cpu_dir}/topology/thread_siblings_list").strip()
        if sib:
            with contextlib.suppress(ValueError):
                smt_siblings = max(smt_siblings, len(parse_cpu_list(sib)))
    numa: dict[str, list[int]] = {}
    for node in sorted(glob.glob("/sys/devices/system/node/node[0-9]*")):
        with contextlib.suppress(ValueError):
            numa[os.path.basename(node)] = parse_cpu_list(read_proc(f"{node}/cpulist"))
    caches = []
    for idx in sorted(glob.glob("/sys/devices/system/cpu/cpu0/cache/index[0-9]*")):
        caches.append(
            {
                "level": read_proc(f"{idx}/level").strip(),
                "type": read_proc(f"{idx}/type").strip(),
                "size": read_proc(f"{idx}/size").strip(),
                "shared_cpu_list": read_proc(f"{idx}/shared_cpu_list").strip(),
                "line_size": read_proc(f"{idx}/coherency_line_size").strip(),
            }
        )
    model = ""
    for line in read_proc("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    return {
        "logical_cpus": logical,
        "physical_cores": physical,
        "sockets": len(packages) or 1,
        "smt_threads_per_core": smt_siblings,
        "numa_nodes": numa,
        "caches": caches,
        "model": model,
    }


def _cgroup_paths(pid: int) -> dict[str, str]:
    """controller -> path within its hierarchy ('' key is cgroup v2)."""
    out: dict[str, str] = {}
    for line in read_proc(f"/proc/{pid}/cgroup").splitlines():
        parts = line.split(":", 2)
        if len(parts) != 3:
            continue
        _, controllers, path = parts
        if controllers == "":
            out[""] = path
        for c in controllers.split(","):
            if c:
                out[c] = path
    return out


def _first_existing(candidates: list[str]) -> str:
    for c in candidates:
        if os.path.exists(c):
            return c
    return ""


def cpu_capacity(pid: int) -> dict[str, Any]:
    """CPUs the target may run on and the CPU time it may use (cgroup v1 or v2)."""
    info: dict[str, Any] = {}
    try:
        affinity = sorted(os.sched_getaffinity(pid))
    except OSError:
        affinity = list(range(os.cpu_count() or 1))
    info["affinity"] = affinity
    paths = _cgroup_paths(pid)
    root = "/sys/fs/cgroup"
    quota_cores: float | None = None
    cpuset: list[int] | None = None
    version = "v2" if os.path.exists(f"{root}/cgroup.controllers") else "v1"
    info["cgroup_version"] = version
    if version == "v2":
        rel = paths.get("", "/").lstrip("/")
        d = os.path.join(root, rel)
        # walk up: the tightest limit anywhere on the path applies
        cur = d
        while cur.startswith(root):
            cpu_max = read_proc(os.path.join(cur, "cpu.max")).split()
            if len(cpu_max) == 2 and cpu_max[0] != "max":
                with contextlib.suppress(ValueError, ZeroDivisionError):
                    q = int(cpu_max[0]) / int(cpu_max[1])
                    quota_cores = q if quota_cores is None else min(quota_cores, q)
            eff = read_proc(os.path.join(cur, "cpuset.cpus.effective")).strip()
            if eff and cpuset is None:
                with contextlib.suppress(ValueError):
                    cpuset = parse_cpu_list(eff)
            if cur == root:
                break
            cur = os.path.dirname(cur)
        info["cgroup_path"] = "/" + rel
    else:
        cpu_rel = paths.get("cpu", paths.get("cpuacct", "/")).lstrip("/")
        cpu_dir = _first_existing(
            [os.path.join(root, "cpu", cpu_rel), os.path.join(root, "cpu,cpuacct", cpu_rel)]
        )
        if cpu_dir:
            quota = read_proc(os.path.join(cpu_dir, "cpu.cfs_quota_us")).strip()
            period = read_proc(os.path.join(cpu_dir, "cpu.cfs_period_us")).strip()
            with contextlib.suppress(ValueError, ZeroDivisionError):
                if quota and period and int(quota) > 0:
                    quota_cores = int(quota) / int(period)
        set_rel = paths.get("cpuset", "/").lstrip("/")
        set_dir = os.path.join(root, "cpuset", set_rel)
        cpus = (
            read_proc(os.path.join(set_dir, "cpuset.effective_cpus")).strip()
            or read_proc(os.path.join(set_dir, "cpuset.cpus")).strip()
        )
        if cpus:
            with contextlib.suppress(ValueError):
                cpuset = parse_cpu_list(cpus)
        info["cgroup_path"] = "/" + cpu_rel
    usable = set(affinity)
    if cpuset:
        usable &= set(cpuset)
    info["cpuset"] = cpuset
    info["quota_cores"] = quota_cores
    cores = float(len(usable) or len(affinity) or 1)
    if quota_cores is not None:
        cores = min(cores, quota_cores)
    info["usable_cpus"] = sorted(usable)
    info["cores_available"] = round(cores, 2)
    limits = []
    if len(affinity) < (os.cpu_count() or 1):
        limits.append(f"affinity {len(affinity)} CPUs")
    if cpuset and len(cpuset) < (os.cpu_count() or 1):
        limits.append(f"cpuset {len(cpuset)} CPUs")
    if quota_cores is not None:
        limits.append(f"CPU quota {quota_cores:g} cores")
    info["limited_by"] = limits
    return info


def loaded_libraries(pid: int) -> dict[str, list[str]]:
    """Native libraries in the target's address space, grouped by kind."""
    seen: set[str] = set()
    for line in read_proc(f"/proc/{pid}/maps").splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].startswith("/") and ".so" in parts[5]:
            seen.add(parts[5].strip())
    out: dict[str, list[str]] = {}
    for kind, pattern in LIBRARY_KINDS:
        rx = re.compile(pattern)
        hits = sorted({os.path.basename(p) for p in seen if rx.search(os.path.basename(p))})
        if hits:
            out[kind] = hits[:20]
    return out


def clear_referenced(pid: int) -> str:
    """Clear the accessed bits of the target's pages (``/proc/PID/clear_refs``: "1"), so that
    :func:`referenced_bytes` later reads what it touched since: its working set, the span of
    memory its loops run over. The kernel re-marks a page at its next access; nothing else
    of the target changes. "" when done, else why not."""
    try:
        fd = os.open(f"/proc/{pid}/clear_refs", os.O_WRONLY | os.O_CLOEXEC)
    except OSError as exc:
        return f"its pages' accessed bits could not be cleared: {exc.strerror}"
    try:
        os.write(fd, b"1")
    except OSError as exc:
        return f"its pages' accessed bits could not be cleared: {exc.strerror}"
    finally:
        os.close(fd)
    return ""


def referenced_bytes(pid: int) -> int | None:
    """Bytes of the target's data accessed since :func:`clear_referenced` (smaps' Referenced),
    or None. The code of its programs and libraries (every mapping of a file it maps
    executable) is left out: a page cache page counts as referenced when anyone reads the
    file, and the profilers read those files for their symbols."""
    text = read_proc(f"/proc/{pid}/smaps")
    if not text:
        return None
    total, code, current = 0, set(), ""
    referenced: list[tuple[str, int]] = []
    for line in text.splitlines():
        head = line.split(None, 5)
        if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
            current = head[5].strip() if len(head) == 6 else ""
            if "x" in head[1] and current.startswith("/"):
                code.add(current)
        elif line.startswith("Referenced:"):
            try:
                referenced.append((current, int(line.split()[1]) * 1024))
            except (IndexError, ValueError):
                return None
    for path, n in referenced:
        if path not in code:
            total += n
    return total


#: at most this many libraries' data ranges are kept (a process maps a few hundred files)
MAX_DATA_SEGMENTS = 400


def data_segments(pid: int) -> list[dict[str, str]] | None:
    """Where each mapped file's writable data lies (its .data, and the anonymous .bss that
    follows it): a lock at an address inside one is that library's own, a static mutex
    such as OpenBLAS's lock around concurrent threaded GEMMs. File names only; ``None``
    when the maps cannot be read."""
    text = read_proc(f"/proc/{pid}/maps")
    if not text:
        return None
    out: list[dict[str, Any]] = []
    last_end = -1
    for m in parse_maps(text, need="w"):
        if m.file_backed:
            out.append({"library": os.path.basename(m.path)[:200], "start": m.start, "end": m.end})
        elif not m.path and out and m.start == last_end == out[-1]["end"]:
            out[-1]["end"] = m.end  # the .bss past the file's end: anonymous, right after it
        last_end = m.end
    return [
        {"library": d["library"], "start": hex(d["start"]), "end": hex(d["end"])}
        for d in out[:MAX_DATA_SEGMENTS]
    ]


def env_settings(pid: int) -> tuple[dict[str, str], str]:
    """Allow-listed variables from /proc/PID/environ, and a note if it could not be read."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            raw = fh.read(1 << 20)
    except OSError as exc:
        return {}, f"environment not readable: {exc.strerror}"
    out: dict[str, str] = {}
    allowed = set(ENV_ALLOW_LIST)
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if not sep:
            continue
        name = key.decode("utf-8", "replace")
        if name in allowed:
            out[name] = value.decode("utf-8", "replace")[:200]
    return out, ""


def interpreter_runtime(pid: int, elf_path: str | None) -> dict[str, Any] | None:
    """Address range of CPython's ``_PyRuntime`` in the target.

    The GIL lives inside it (``_PyRuntime.ceval.gil`` up to 3.11, the main interpreter's
    ``_gil`` from 3.12), so a thread blocked in futex() on an address in this range waits
    for the GIL. Read from the ELF symbol table of the interpreter's binary or libpython.
    """
    if not elf_path:
        return None
    # Read the file the target mapped, through its root (containers see their own paths).
    candidates = [f"/proc/{pid}/root{elf_path}", elf_path]
    path = next((c for c in candidates if os.path.isfile(c)), None)
    if path is None:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    found = _runtime_symbol(path, (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
    if found is None:
        return None
    sym_value, sym_size, is_pie = found
    base: int | None = 0
    if is_pie:
        real = os.path.realpath(path) if not path.startswith("/proc/") else elf_path
        base = _load_base(read_proc(f"/proc/{pid}/maps"), (elf_path, real))
    if base is None:
        return None
    start = base + sym_value
    return {
        "symbol": "_PyRuntime",
        "elf": elf_path,
        "start": hex(start),
        "end": hex(start + sym_size),
    }


def _load_base(maps: str, names: tuple[str, ...]) -> int | None:
    """Start of the loaded image of the file named ``names``: the offset-0 mapping whose next
    mapping of the same file is a later segment (offset > 0). A plain mmap() of the file (a
    symbol reader in the target) is also an offset-0 mapping, followed by nothing of its own."""
    spans = []
    for line in maps.splitlines():
        parts = line.split(None, 5)
        if len(parts) == 6 and parts[5].strip() in names:
            spans.append((int(parts[0].split("-")[0], 16), int(parts[2], 16)))
    spans.sort()
    for (start, offset), (_, next_offset) in itertools.pairwise(spans):
        if offset == 0 and next_offset > 0:
            return start
    return None


@functools.lru_cache(maxsize=8)
def _runtime_symbol(path: str, identity: tuple[int, ...]) -> tuple[int, int, bool] | None:
    """(value, size, position-independent) of ``_PyRuntime`` in the ELF file at ``path``;
    cached by the file's identity: a watch reads libpython's symbols once, not per capture
    (0.09 CPU-s each)."""
    try:
        from elftools.common.exceptions import ELFError
        from elftools.elf.elffile import ELFFile
        from elftools.elf.sections import SymbolTableSection
    except ImportError:  # pragma: no cover - a declared dependency
        return None
    try:
        with os.fdopen(open_regular(path), "rb") as fh:
            elf = ELFFile(fh)
            is_pie = elf.header["e_type"] == "ET_DYN"
            for secname in (".dynsym", ".symtab"):
                sec = elf.get_section_by_name(secname)
                if not isinstance(sec, SymbolTableSection):
                    continue
                syms = sec.get_symbol_by_name("_PyRuntime")
                if syms and syms[0]["st_size"]:
                    return int(syms[0]["st_value"]), int(syms[0]["st_size"]), is_pie
    except (OSError, ELFError, ValueError):
        return None
    return None


class SystemSnapshot(Collector):
    name = "system"
    description = "CPU topology and capacity, libraries, thread-pool settings, Python version"

    def __init__(self) -> None:
        self._snapshot: dict[str, Any] = {}
        self._taken: dict[str, Any] | None = None  # what its thread read (start)
        self._thread: threading.Thread | None = None
        self._notes: list[str] = []
        self._cleared_at: float | None = None

    def start(self, ctx: CaptureContext) -> None:
        """Read the host and the target on a thread of its own: the interpreter's ELF
        symbols and the libraries take 0.1-0.2 s, which delayed every collector started
        after this one, perf's included, and so the window (:meth:`finish` waits for it)."""
        self._snapshot = {"loadavg_start": read_proc("/proc/loadavg").split()[:3]}
        self._thread = threading.Thread(
            target=self._take, args=(ctx,), name="diagnose system", daemon=True
        )
        self._thread.start()

    def _take(self, ctx: CaptureContext) -> None:
        pid = ctx.target.pid
        env, env_note = env_settings(pid)
        notes = [env_note] if env_note else []
        runtime = None
        if ctx.target.is_python:
            runtime = interpreter_runtime(pid, ctx.target.python_elf)
            if runtime is None:
                notes.append(
                    "could not locate the interpreter's _PyRuntime symbol: GIL waits cannot be "
                    "told apart from other lock waits"
                )
        cleared = clear_referenced(pid)
        self._cleared_at = None if cleared else time.monotonic()
        if cleared:
            notes.append(cleared)
        self._taken = {
            "host": host_info(),
            "cpu": cpu_topology(),
            "capacity": cpu_capacity(pid),
            "python": {
                "is_python": ctx.target.is_python,
                "version": ctx.target.python_version,
                "elf": ctx.target.python_elf,
                "runtime": runtime,
            },
            "libraries": loaded_libraries(pid),
            "env": env,
            "env_allow_list": list(ENV_ALLOW_LIST),
            "diagnose_version": __version__,
        }
        self._notes.extend(notes)

    def finish(self, ctx: CaptureContext, timeout: float) -> CollectorRecord:
        if self._thread is not None:
            self._thread.join(timeout)
        if self._taken is None:
            self._notes.append("the host and the target could not be read in time")
        self._snapshot.update(self._taken or {})
        self._snapshot["loadavg_end"] = read_proc("/proc/loadavg").split()[:3]
        # the dependencies it was connected to as the window closed (null: not readable)
        self._snapshot["outbound"] = outbound_peers(ctx.target.pid)
        # at the end: libraries loaded during the window are mapped by then
        self._snapshot["data_segments"] = data_segments(ctx.target.pid)
        self._snapshot["touched"] = self._touched(ctx.target.pid)
        ctx.writer.write_json("system.json", self._snapshot)
        status = CollectorStatus.OK
        return self.record(status, "; ".join(self._notes), ["system.json"])

    def _touched(self, pid: int) -> dict[str, Any] | None:
        """The memory the target accessed from the snapshot to the window's end."""
        if self._cleared_at is None:
            return None
        got = referenced_bytes(pid)
        span = time.monotonic() - self._cleared_at
        return None if got is None else {"bytes": got, "seconds": round(span, 3)}


def host_info() -> dict[str, Any]:
    osr = {}
    for line in read_proc("/etc/os-release").splitlines():
        k, sep, v = line.partition("=")
        if sep and k in ("PRETTY_NAME", "ID", "VERSION_ID"):
            osr[k] = v.strip().strip('"')
    virt = ""
    product = read_proc("/sys/class/dmi/id/product_name").strip()
    if product:
        virt = product
    return {
        "hostname": socket.gethostname(),
        "kernel": platform.release(),
        "machine": platform.machine(),
        "os": osr.get("PRETTY_NAME", platform.system()),
        "product": virt,
        "boot_id": read_proc("/proc/sys/kernel/random/boot_id").strip(),
        "in_container": Path("/.dockerenv").exists() or "container" in os.environ,
    }
