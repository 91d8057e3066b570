"""Frames: what a frame's text says, and which code a stack is in (rules/frames.toml).

A Python frame (py-spy) reads ``name (file:line)``, a native one (perf) ``symbol
(library)``; stacks are tuples of frames, root first. Category patterns are globs, compiled
once into one regular expression per category and key; stacks are categorised once per
distinct stack, so the cost does not grow with samples.
"""

from __future__ import annotations

import fnmatch
import re
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from diagnose.errors import BadRules
from diagnose.formats.stacks import Stack
from diagnose.resources import rules_dir
from diagnose.tomlfile import TomlFile

STAGE_KINDS = ("stage", "kernel", "model")
WAIT_KINDS = ("idle", "lock", "io", "client")
MAX_PATTERNS = 2000
MAX_PATTERN_LEN = 200

_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^()]*)\)$", re.S)


# frames repeat across thousands of samples and stacks: each distinct one is parsed once
# (bounded caches)
@lru_cache(maxsize=1 << 16)
def split_frame(frame: str) -> tuple[str, str]:
    """'name (file:line)' or 'symbol (library)' -> (name, file without line)."""
    m = _FRAME.match(frame)
    if not m:
        return frame, ""
    file = m.group("file")
    head, sep, tail = file.rpartition(":")
    if sep and tail.isdigit():
        file = head
    return m.group("name"), file


def frame_line(frame: str) -> int | None:
    """The line number of a Python frame ``name (file:line)``, None without one."""
    m = _FRAME.match(frame)
    if not m:
        return None
    _, sep, tail = m.group("file").rpartition(":")
    return int(tail) if sep and tail.isdigit() else None


@lru_cache(maxsize=1 << 16)
def is_native_frame(frame: str) -> bool:
    """Native frames (perf) name a library with no line number; Python frames end :LINE)."""
    m = _FRAME.match(frame)
    if not m:
        return False
    file = m.group("file")
    return not re.search(r":\d+$", file) and not file.endswith(".py")


def python_leaf(stack: Stack) -> str:
    """The leaf-most Python frame ("" if none)."""
    for frame in reversed(stack):
        if not is_native_frame(frame):
            return frame
    return ""


#: perf's name for the kernel's frames
KERNEL = "[kernel.kallsyms]"


def user_leaf(stack: Stack) -> str:
    """The leaf-most frame outside the kernel ("" if none)."""
    for f in reversed(stack):
        if not f.endswith(f"({KERNEL})"):
            return f
    return ""


#: The interpreter's own machinery (evaluating bytecode, calling a function): what the
#: Python frames already show. libpython's other functions (the regular expression engine,
#: str methods, dict lookups) are work done on a line, and stay.
_INTERP = re.compile(
    r"(_PyEval|PyEval_|_PyObject_|PyObject_Call|PyObject_Vectorcall|_PyFunction_|"
    r"method_vectorcall|cfunction_|vectorcall|_Py_call|slot_tp_call|builtin_|_PyRun_|"
    r"pymain_|Py_RunMain|Py_BytesMain)",
    re.I,
)


def mixed_stack(py: Stack, native: Stack) -> Stack:
    """Python frames, then the native frames below the interpreter's last frame (by name:
    frames of the interpreter's eval and call machinery; other libpython functions, such as
    the regular expression engine and str methods, are the work of the line and stay)."""
    if not py:
        return native
    cut = 0
    for i, f in enumerate(native):
        name, file = split_frame(f)
        if _INTERP.search(name) or (name.startswith("[unknown]") and "python" in file):
            cut = i + 1
    return py + native[cut:]


def inside_region(stack: Stack, wait_site: str) -> bool:
    """Does ``stack`` run inside the region a lock guards, as seen from where its waiters
    wait (``wait_site``, their leaf Python frame: the ``with lock:`` line)?

    The one rule, for inferred and measured holders alike: some frame of ``stack`` is in
    the waiters' function (same name and file) at a later line than theirs, i.e. in the
    body of ``with lock:``. A frame or a wait site without a line number cannot be placed
    and is not inside."""
    name, file = split_frame(wait_site)
    line = frame_line(wait_site)
    if line is None:
        return False
    for frame in stack:
        if split_frame(frame) == (name, file):
            at = frame_line(frame)
            if at is not None and at > line:
                return True
    return False


_MEMO_MAX = 1 << 16


@dataclass
class _Matcher:
    """Alternatives of (function glob, file glob); either part may be absent."""

    function_only: re.Pattern[str] | None = None
    file_only: re.Pattern[str] | None = None
    pairs: list[tuple[re.Pattern[str], re.Pattern[str]]] = field(default_factory=list)
    # (name, file) -> matches: the same frames are asked about again and again
    _memo: dict[tuple[str, str], bool] = field(default_factory=dict, repr=False, compare=False)

    def forget(self) -> int:
        """Empty the memo; how many entries it held."""
        n = len(self._memo)
        self._memo.clear()
        return n

    def matches(self, name: str, file: str) -> bool:
        key = (name, file)
        hit = self._memo.get(key)
        if hit is None:
            hit = self._matches(name, file)
            if len(self._memo) < _MEMO_MAX:
                self._memo[key] = hit
        return hit

    def matches_library(self, name: str, file: str) -> bool:
        """A match by the frame's file (a library's path), never by a function name alone."""
        if self.file_only is not None and file and self.file_only.match(file):
            return True
        return any(fr.match(name) and pr.match(file) for fr, pr in self.pairs)

    def _matches(self, name: str, file: str) -> bool:
        if self.function_only is not None and self.function_only.match(name):
            return True
        if self.file_only is not None and file and self.file_only.match(file):
            return True
        return any(fr.match(name) and pr.match(file) for fr, pr in self.pairs)


def _glob(p: str) -> str:
    return fnmatch.translate(p)


def _compile(entries: Any, where: str) -> _Matcher:
    if not isinstance(entries, list):
        raise BadRules(f"{where}: 'match' must be a list of globs or tables")
    if len(entries) > MAX_PATTERNS:
        raise BadRules(f"{where}: more than {MAX_PATTERNS} patterns")
    funcs: list[str] = []
    files: list[str] = []
    pairs: list[tuple[re.Pattern[str], re.Pattern[str]]] = []
    for e in entries:
        if isinstance(e, str):
            _check_glob(e, where)
            funcs.append(_glob(e))
        elif isinstance(e, dict):
            unknown = set(e) - {"function", "file"}
            if unknown or not e:
                raise BadRules(
                    f"{where}: a pattern table takes 'function' and/or 'file', not {sorted(unknown) or 'nothing'}"
                )
            for v in e.values():
                if not isinstance(v, str):
                    raise BadRules(f"{where}: pattern values must be strings")
                _check_glob(v, where)
            if "function" in e and "file" in e:
                pairs.append(
                    (
                        re.compile(_glob(e["function"]), re.I | re.S),
                        re.compile(_glob(e["file"]), re.I | re.S),
                    )
                )
            elif "function" in e:
                funcs.append(_glob(e["function"]))
            else:
                files.append(_glob(e["file"]))
        else:
            raise BadRules(f"{where}: a pattern must be a glob string or a table")
    return _Matcher(
        function_only=re.compile("|".join(funcs), re.I | re.S) if funcs else None,
        file_only=re.compile("|".join(files), re.I | re.S) if files else None,
        pairs=pairs,
    )


def _check_glob(p: str, where: str) -> None:
    if not p or len(p) > MAX_PATTERN_LEN:
        raise BadRules(f"{where}: patterns must be 1-{MAX_PATTERN_LEN} characters")
    if p.count("*") > 8:
        raise BadRules(f"{where}: pattern {p[:40]!r} has more than 8 '*'")


@dataclass
class Category:
    name: str
    kind: str  # stage | kernel | model
    description: str
    matcher: _Matcher
    leaf: _Matcher | None = None  # model: user functions named like the model (leaf only)


@dataclass
class Pool:
    """A native thread pool (frames.toml ``[[pool]]``): its libraries, its wait loops, and
    the setting that sizes it (``{size}`` replaced by plain text substitution)."""

    name: str
    library: _Matcher
    spin: _Matcher
    fix: str

    def fix_for(self, size: int) -> str:
        return self.fix.replace("{size}", str(size))


#: where the model call is in a stack, as :meth:`FrameRules.model_call` finds it
ModelCall = tuple[int, str]  # (index of the first frame of the call, "framework" | "kernel")


class FrameRules:
    """The categories, wait lists, structure hints and native pools of one frames.toml."""

    def __init__(
        self,
        categories: list[Category],
        waits: dict[str, _Matcher],
        source: str,
        handoff: _Matcher | None = None,
        pools: list[Pool] | None = None,
        spin: _Matcher | None = None,
        serving: _Matcher | None = None,
        model_kernels: _Matcher | None = None,
        sends: _Matcher | None = None,
        lifecycle: _Matcher | None = None,
        array_loops: _Matcher | None = None,
    ) -> None:
        self.categories = categories
        self.waits = waits
        self.source = source
        self.handoff = handoff or _Matcher()
        self.serving = serving or _Matcher()
        self.model_kernels = model_kernels or _Matcher()
        self.sends = sends or _Matcher()
        self.lifecycle = lifecycle or _Matcher()
        self.array_loops = array_loops or _Matcher()
        self.pools = pools or []
        self.spin = spin or _Matcher()
        self._stage = [c for c in categories if c.kind == "stage"]
        self._kernel = [c for c in categories if c.kind == "kernel"]
        self._model = [c for c in categories if c.kind == "model"]
        self._compute = [c for c in self._kernel if c.name == "compute"]
        self._cache: dict[Stack, str] = {}
        self._wait_cache: dict[str, str | None] = {}
        self._call_cache: dict[Stack, ModelCall | None] = {}
        self._framework_cache: dict[Stack, bool] = {}

    def forget(self) -> int:
        """Empty the caches of stacks and frames seen (how many entries they held): one
        instance serves every analysis of a long-lived process (``diagnose watch``), and
        each capture's stacks are its own."""
        caches: list[dict[Any, Any]] = [
            self._cache, self._wait_cache, self._call_cache, self._framework_cache
        ]  # fmt: skip
        n = sum(len(c) for c in caches)
        for cache in caches:
            cache.clear()
        matchers = [self.handoff, self.sends, self.lifecycle, self.serving, self.model_kernels]
        matchers += [self.spin, self.array_loops]
        matchers += self.waits.values()
        matchers += [c.matcher for c in self.categories]
        matchers += [m for p in self.pools for m in (p.library, p.spin)]
        return n + sum(m.forget() for m in matchers)

    @property
    def names(self) -> list[str]:
        """Every on-CPU category: the file's, "spin" (a native pool's wait loops, placed by
        analyse/pools.py where pools are defined) and "other"."""
        out = [c.name for c in self.categories]
        return [*out, *(["spin"] if self.pools else []), "other"]

    def model_call(self, stack: Stack) -> ModelCall | None:
        """Where the model is called in ``stack`` (root first), or None: the root-most
        frame of a model framework's call (the "model" category's ``match``), else the first
        native frame of a stack whose leaf-most native frame is a compute kernel (a GEMM
        reached from the line that calls it) or a model's memory-bound kernel (``[structure]
        model_kernels``: a GEMV). A user function's bare name never is; the
        entry method of a class named *Model is (frames.toml explains why)."""
        if stack in self._call_cache:
            return self._call_cache[stack]
        split = [split_frame(f) for f in stack]
        found: ModelCall | None = None
        for i, (n, f) in enumerate(split):
            if any(c.matcher.matches(n, f) for c in self._model):
                found = (i, "framework")
                break
        if found is None and self.is_model_kernel(stack, split):
            first = next(i for i, fr in enumerate(stack) if is_native_frame(fr))
            found = (first, "kernel")
        if len(self._call_cache) < 200_000:
            self._call_cache[stack] = found
        return found

    def is_model_kernel(self, stack: Stack, split: list[tuple[str, str]] | None = None) -> bool:
        """Is the stack in a model's kernel: a compute kernel, or a memory-bound one that
        models run (``[structure] model_kernels``: a GEMV)?"""
        kernel = self.kernel_category(stack, split)
        if kernel is None:
            return False
        if any(c.name == kernel for c in self._compute):
            return True
        leaf = next((f for f in reversed(stack) if is_native_frame(f)), None)
        return leaf is not None and self.model_kernels.matches(*split_frame(leaf))

    def in_framework(self, stack: Stack) -> bool:
        """Whether a frame of ``stack`` is a model framework's own, known by its library
        (torch.nn, onnxruntime, transformers, libtorch...), not by a function's name."""
        hit = self._framework_cache.get(stack)
        if hit is None:
            hit = any(
                c.matcher.matches_library(*split_frame(f)) for f in stack for c in self._model
            )
            if len(self._framework_cache) < 200_000:
                self._framework_cache[stack] = hit
        return hit

    def kernel_category(
        self, stack: Stack, split: list[tuple[str, str]] | None = None
    ) -> str | None:
        """The kernel category (allocator, memory, compute) of the leaf-most native frame
        that matches one, or None."""
        split = split or [split_frame(f) for f in stack]
        for frame, (n, f) in zip(reversed(stack), reversed(split), strict=True):
            if not is_native_frame(frame):
                continue
            for cat in self._kernel:
                if cat.matcher.matches(n, f):
                    return cat.name
        return None

    def stage_by_name(self, stack: Stack, below: int | None = None) -> str | None:
        """The stage category a frame names, looking only above index ``below`` (the model
        call: a stage's name inside the model call is the model's own code), or None."""
        end = len(stack) if below is None else below
        split = [split_frame(f) for f in stack[:end]]
        for cat in self._stage:
            if any(cat.matcher.matches(n, f) for n, f in split):
                return cat.name
        return None

    def is_stage(self, category: str) -> bool:
        """Is ``category`` a stage around the model call (preprocess, postprocess, ...)?"""
        return any(c.name == category for c in self._stage)

    def inference_category(self, stack: Stack) -> str:
        """What a sample inside the model call does: its kernel category, else "model"."""
        return self.kernel_category(stack) or "model"

    def categorize(self, stack: Stack) -> str:
        """The category of one on-CPU stack sample (root first) by its frames' names alone.
        See frames.toml; the call structure (analyse/stages.py) comes first where it can
        place the sample."""
        hit = self._cache.get(stack)
        if hit is not None:
            return hit
        call = self.model_call(stack)
        stage = self.stage_by_name(stack, call[0] if call else None)
        result = stage or self.kernel_category(stack)
        if result is None:
            if call is not None or self._leaf_model(stack):
                result = "model"
            else:
                result = "other"
        if len(self._cache) < 200_000:
            self._cache[stack] = result
        return result

    def _leaf_model(self, stack: Stack) -> bool:
        """Is the leaf-most Python frame a function named like the model (its own lines)?"""
        leaf = python_leaf(stack)
        if not leaf:
            return False
        n, f = split_frame(leaf)
        return any(c.leaf is not None and c.leaf.matches(n, f) for c in self._model)

    def is_serving(self, frame: str) -> bool:
        """Is ``frame`` the serving machinery's (``[structure] serving``)?"""
        n, f = split_frame(frame)
        return self.serving.matches(n, f)

    def is_handoff(self, frame: str) -> bool:
        n, f = split_frame(frame)
        return self.handoff.matches(n, f)

    def is_send(self, frame: str) -> bool:
        """Does ``frame`` send work to another process (``[structure] sends``)?"""
        n, f = split_frame(frame)
        return self.sends.matches(n, f)

    def in_array_loop(self, frame: str) -> bool:
        """Is ``frame`` (a native frame) the array library's own loop code
        (``[structure] array_loops``)?"""
        n, f = split_frame(frame)
        return bool(f) and self.array_loops.matches(n, f)

    def starts_or_ends(self, stack: Stack) -> bool:
        """Is this native stack starting or ending a thread or a process
        (``[structure] lifecycle``: clone, fork, exit, wait)?"""
        for frame in stack:
            n, f = split_frame(frame)
            if self.lifecycle.matches(n, f):
                return True
        return False

    def serves_client(self, stack: Stack) -> bool:
        """Is the code that asked for this socket wait a server's (``[waits] client``)?
        The code that asked (the leaf-most Python frame outside the socket modules) decides:
        a server module's frame, or the request handler the server module called (its
        ``handle``/``do_POST`` reading the request from its own connection); a call the
        handler makes further down (a client library, the app's own client) is a dependency's."""
        m = self.waits.get("client")
        py = [f for f in stack if not is_native_frame(f)]
        caller = waiting_caller(stack)
        if m is None or not caller:
            return False
        if m.matches(*split_frame(caller)):
            return True
        at = len(py) - 1 - py[::-1].index(caller)
        return at > 0 and m.matches(*split_frame(py[at - 1]))

    def pool_of(self, frames: list[str]) -> Pool | None:
        """The pool whose libraries most of ``frames`` (native frames) are in."""
        counts = [0] * len(self.pools)
        for frame in frames:
            _, f = split_frame(frame)
            for i, p in enumerate(self.pools):
                if p.library.matches("", f):
                    counts[i] += 1
                    break
        if not counts or max(counts) == 0:
            return None
        return self.pools[counts.index(max(counts))]

    def pool_of_library(self, library: str) -> Pool | None:
        """The native pool whose libraries include the file ``library`` (a base name)."""
        return next((p for p in self.pools if p.library.matches("", library)), None)

    def spins(self, stack: Stack, pool: Pool | None) -> bool:
        """Is this on-CPU sample a pool's wait loop (its leaf-most user frame one of the
        pool's ``spin`` frames), or a yield anywhere in the stack?"""
        for frame in stack:
            n, f = split_frame(frame)
            if self.spin.matches(n, f):
                return True
        for frame in reversed(stack):
            if frame.endswith(f"({KERNEL})"):
                continue
            n, f = split_frame(frame)
            # the thread's pool's wait loops, or those of the runtime the leaf is in (torch's
            # pool threads are OpenMP's: they wait in libgomp)
            owners = [p for p in self.pools if p.library.matches_library(n, f)]
            return any(p.spin.matches(n, f) for p in ([pool] if pool else []) + owners)
        return False

    def wait_kind(self, leaf_frame: str) -> str | None:
        """'idle' | 'lock' | 'io' for a blocked thread's leaf-most Python frame, or None."""
        if leaf_frame in self._wait_cache:
            return self._wait_cache[leaf_frame]
        n, f = split_frame(leaf_frame)
        result = None
        for kind in ("lock", "io", "idle"):  # lock first: Semaphore.acquire calls wait()
            m = self.waits.get(kind)
            if m is not None and m.matches(n, f):
                result = kind
                break
        self._wait_cache[leaf_frame] = result
        return result


#: files of the modules a socket read or write goes through on its way to the kernel
_SOCKET_MODULES = ("socket.py", "ssl.py", "selectors.py", "io.py", "_pyio.py")


def in_socket_module(frame: str) -> bool:
    """Is this Python frame in a module a socket read or write goes through?"""
    return bool(frame) and split_frame(frame)[1].endswith(_SOCKET_MODULES)


def waiting_caller(stack: Stack) -> str:
    """The code that asked for a wait: the leaf-most Python frame outside the modules a
    socket read or write goes through (socket.py, ssl.py, selectors.py, io.py); "" if none."""
    for frame in reversed(stack):
        if is_native_frame(frame):
            continue
        if split_frame(frame)[1].endswith(_SOCKET_MODULES):
            continue
        return frame
    return ""


#: modules whose waits are on a lock made per wait (a Condition's waiter lock, a queue's)
_SYNC_MODULES = ("threading.py", "queue.py")


def sync_caller(stack: Stack) -> str:
    """For a wait inside threading.py or queue.py (Condition.wait, Queue.get), the code that
    asked for it: the lock it blocks on is made per wait, so its address names nothing,
    while the caller names the resource. "" for any other wait."""
    leaf = python_leaf(stack)
    if not leaf or not split_frame(leaf)[1].endswith(_SYNC_MODULES):
        return ""
    for frame in reversed(stack):
        if is_native_frame(frame) or split_frame(frame)[1].endswith(_SYNC_MODULES):
            continue
        return frame
    return ""


def _pools(tf: TomlFile, path: Path) -> tuple[list[Pool], _Matcher]:
    raw = tf.data.get("pool", [])
    if not isinstance(raw, list):
        raise BadRules(f"{path}: [[pool]] must be an array of tables")
    pools: list[Pool] = []
    for i, p in enumerate(raw):
        where = tf.where(tf.table_line("pool", i))
        if not isinstance(p, dict) or not isinstance(p.get("name"), str):
            raise BadRules(f"{where}: a [[pool]] needs a name")
        fix = p.get("fix", "")
        if not isinstance(fix, str) or len(fix) > 400:
            raise BadRules(f"{where}: a pool's fix must be a string of at most 400 characters")
        libs = p.get("library", [])
        if not isinstance(libs, list) or not all(isinstance(x, str) for x in libs):
            raise BadRules(f"{where}: a pool's library must be a list of file globs")
        pools.append(
            Pool(
                name=str(p["name"])[:40],
                library=_compile([{"file": x} for x in libs], where),
                spin=_compile(p.get("spin", []), where),
                fix=fix,
            )
        )
    common = tf.data.get("pools", {})
    if not isinstance(common, dict):
        raise BadRules(f"{path}: [pools] must be a table")
    return pools, _compile(common.get("spin", []), f"{path}: [pools] spin")


def load_frame_rules(path: Path) -> FrameRules:
    tf = TomlFile.load(path)
    raw = tf.data.get("category")
    if not isinstance(raw, list) or not raw:
        raise BadRules(f"{path}:1: no [[category]] tables")
    cats: list[Category] = []
    seen: set[str] = set()
    for i, c in enumerate(raw):
        line = tf.table_line("category", i)
        where = tf.where(line)
        if not isinstance(c, dict):
            raise BadRules(f"{where}: [[category]] must be a table")
        name = c.get("name")
        kind = c.get("kind", "stage")
        if not isinstance(name, str) or not re.fullmatch(r"[a-z_]{1,32}", name):
            raise BadRules(f"{where}: category name must be lower_case letters, got {name!r}")
        if name in seen or name == "other":
            raise BadRules(f"{where}: category {name!r} is defined twice or reserved")
        if kind not in STAGE_KINDS:
            raise BadRules(f"{where}: kind must be one of {', '.join(STAGE_KINDS)}, got {kind!r}")
        seen.add(name)
        matcher = _compile(c.get("match", []), tf.where(tf.key_line("match", line)))
        leaf = None
        if "leaf" in c:
            if kind != "model":
                raise BadRules(f"{where}: only a model category takes 'leaf'")
            leaf = _compile(c["leaf"], tf.where(tf.key_line("leaf", line)))
        cats.append(Category(name, kind, str(c.get("description", "")), matcher, leaf))
    waits_raw = tf.data.get("waits", {})
    if not isinstance(waits_raw, dict):
        raise BadRules(f"{path}: [waits] must be a table")
    waits: dict[str, _Matcher] = {}
    for kind, entries in waits_raw.items():
        if kind not in WAIT_KINDS:
            raise BadRules(f"{path}: [waits] keys are {', '.join(WAIT_KINDS)}, not {kind!r}")
        waits[kind] = _compile(entries, tf.where(tf.key_line(kind)))
    structure = tf.data.get("structure", {})
    if not isinstance(structure, dict):
        raise BadRules(f"{path}: [structure] must be a table")
    handoff = _compile(structure.get("handoff", []), tf.where(tf.key_line("handoff")))
    serving = _compile(structure.get("serving", []), tf.where(tf.key_line("serving")))
    kernels = _compile(structure.get("model_kernels", []), tf.where(tf.key_line("model_kernels")))
    sends = _compile(structure.get("sends", []), tf.where(tf.key_line("sends")))
    lifecycle = _compile(structure.get("lifecycle", []), tf.where(tf.key_line("lifecycle")))
    loops = _compile(structure.get("array_loops", []), tf.where(tf.key_line("array_loops")))
    pools, spin = _pools(tf, path)
    return FrameRules(
        cats, waits, str(path), handoff, pools, spin, serving, kernels, sends, lifecycle, loops
    )


@lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> FrameRules:
    return load_frame_rules(Path(path))


def frame_rules(extra_dir: Path | None = None) -> FrameRules:
    """frames.toml from ``extra_dir`` when it has one, else the built-in one."""
    path = rules_dir() / "frames.toml"
    if extra_dir is not None and (extra_dir / "frames.toml").is_file():
        path = extra_dir / "frames.toml"
    return _cached(str(path), path.stat().st_mtime)
