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
WAIT_KINDS = ("idle", "lock", "io")
MAX_PATTERNS = 2000
MAX_PATTERN_LEN = 200

_FRAME = re.compile(r"^(?P<name>.*?) \((?P<file>[^()]*)\)$", re.S)


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


_INTERP = re.compile(
    r"(libpython|/python\d|_PyEval|PyEval_|_PyObject_|PyObject_Call|_PyFunction_|method_vectorcall|cfunction_|vectorcall)",
    re.I,
)


def mixed_stack(py: Stack, native: Stack) -> Stack:
    """Python frames, then the native frames below the interpreter's last frame."""
    if not py:
        return native
    cut = 0
    for i, f in enumerate(native):
        name, file = split_frame(f)
        if _INTERP.search(file) or _INTERP.search(name):
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


@dataclass
class _Matcher:
    """Alternatives of (function glob, file glob); either part may be absent."""

    function_only: re.Pattern[str] | None = None
    file_only: re.Pattern[str] | None = None
    pairs: list[tuple[re.Pattern[str], re.Pattern[str]]] = field(default_factory=list)

    def matches(self, name: str, file: str) -> bool:
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


class FrameRules:
    """The categories and wait lists of one frames.toml."""

    def __init__(self, categories: list[Category], waits: dict[str, _Matcher], source: str) -> None:
        self.categories = categories
        self.waits = waits
        self.source = source
        self._stage = [c for c in categories if c.kind == "stage"]
        self._kernel = [c for c in categories if c.kind == "kernel"]
        self._model = [c for c in categories if c.kind == "model"]
        self._cache: dict[Stack, str] = {}
        self._wait_cache: dict[str, str | None] = {}

    @property
    def names(self) -> list[str]:
        out = [c.name for c in self.categories]
        return [*out, "other"]

    def categorize(self, stack: Stack) -> str:
        """The category of one on-CPU stack sample (root first). See frames.toml."""
        hit = self._cache.get(stack)
        if hit is not None:
            return hit
        split = [split_frame(f) for f in stack]
        result = "other"
        for cat in self._stage:
            if any(cat.matcher.matches(n, f) for n, f in split):
                result = cat.name
                break
        else:
            found = False
            for frame, (n, f) in zip(reversed(stack), reversed(split), strict=True):
                if not is_native_frame(frame):
                    continue
                for cat in self._kernel:
                    if cat.matcher.matches(n, f):
                        result = cat.name
                        found = True
                        break
                if found:
                    break
            if not found:
                for cat in self._model:
                    if any(cat.matcher.matches(n, f) for n, f in split):
                        result = cat.name
                        break
        if len(self._cache) < 200_000:
            self._cache[stack] = result
        return result

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
        cats.append(Category(name, kind, str(c.get("description", "")), matcher))
    waits_raw = tf.data.get("waits", {})
    if not isinstance(waits_raw, dict):
        raise BadRules(f"{path}: [waits] must be a table")
    waits: dict[str, _Matcher] = {}
    for kind, entries in waits_raw.items():
        if kind not in WAIT_KINDS:
            raise BadRules(f"{path}: [waits] keys are {', '.join(WAIT_KINDS)}, not {kind!r}")
        waits[kind] = _compile(entries, tf.where(tf.key_line(kind)))
    return FrameRules(cats, waits, str(path))


@lru_cache(maxsize=8)
def _cached(path: str, mtime: float) -> FrameRules:
    return load_frame_rules(Path(path))


def frame_rules(extra_dir: Path | None = None) -> FrameRules:
    """frames.toml from ``extra_dir`` when it has one, else the built-in one."""
    path = rules_dir() / "frames.toml"
    if extra_dir is not None and (extra_dir / "frames.toml").is_file():
        path = extra_dir / "frames.toml"
    return _cached(str(path), path.stat().st_mtime)
