"""The calls on each line of the target's own Python code that calls another function, in
the order they run: ``python/calls.json``.

py-spy gives a frame's line, not where in the line it is, so for ``score(clean(text))``
the stacks of ``clean`` and of ``score`` stop at the same line of the caller. Python runs
a call's arguments before the call and a line's calls in a fixed order (the order of the
line's syntax tree, arguments first), so the line's source says which ran first
(analyse/stages.py places the samples of such a line with it).

Read once py-spy's stacks are known, from the files the target runs (through
``/proc/PID/root``: its mount namespace), and only lines a stack shows calling another
function. Bounded: the target's own code only (not the standard library nor installed
packages), :data:`MAX_FILES` files of :data:`MAX_BYTES` at most, :data:`MAX_SECONDS` in
all. The target names its files (``co_filename``), and diagnose may run as root: a file is
read only where the target's user may read it (its owner, or readable by all), and what is
kept of it is the names of the functions each line calls, never its text.
"""

from __future__ import annotations

import ast
import builtins
import os
import re
import stat
import time
from collections import Counter
from collections.abc import Iterable

from diagnose.formats.stacks import Stack

#: bounds on the source read (the target's own modules: a few files of a few hundred lines)
MAX_FILES = 64
MAX_BYTES = 1 << 20
MAX_SECONDS = 1.0
#: at most this many lines kept (the lines of the most sampled files first)
MAX_LINES = 5000

_FRAME = re.compile(r"^(?P<name>.*) \((?P<file>/[^()]*\.py):(?P<line>\d+)\)$")
#: the standard library and installed packages: not the service's own code
_NOT_OWN = re.compile(r"/(site-packages|dist-packages)/|/lib/python\d\.\d+/")
_BUILTINS = frozenset(dir(builtins))

#: a call's kind: "" (a function that runs Python frames of its own), "builtin" (a C
#: function: no frame of its own), "callback" (a builtin given a function it may call:
#: ``sorted(xs, key=f)`` runs ``f`` at the caller's line, inside the builtin)
CallKind = str


def calling_lines(stacks: Iterable[Stack]) -> Counter[tuple[str, int]]:
    """(file, line) of every Python frame that calls another frame, with how many distinct
    stacks show it, for the target's own files."""
    seen: Counter[tuple[str, int]] = Counter()
    for stack in stacks:
        for frame in stack[:-1]:
            m = _FRAME.match(frame)
            if m and not _NOT_OWN.search(m.group("file")):
                seen[(m.group("file"), int(m.group("line")))] += 1
    return seen


def line_calls(
    stacks: Iterable[Stack], pid: int, uid: int | None
) -> dict[str, list[tuple[str, CallKind]]]:
    """``"FILE:LINE" -> [(name, kind), ...]``: the calls that begin on each calling line of
    the target's own code, in the order they run (module docstring). Lines of files that
    cannot be read or parsed are left out."""
    wanted = calling_lines(stacks)
    by_file: dict[str, set[int]] = {}
    weight: Counter[str] = Counter()
    for (file, line), n in wanted.items():
        by_file.setdefault(file, set()).add(line)
        weight[file] += n
    out: dict[str, list[tuple[str, CallKind]]] = {}
    until = time.monotonic() + MAX_SECONDS
    for file, _ in weight.most_common(MAX_FILES):
        if time.monotonic() > until or len(out) >= MAX_LINES:
            break
        tree = _parse(f"/proc/{pid}/root{file}", uid)
        if tree is None:
            continue
        order = _CallOrder(by_file[file])
        order.visit(tree)
        for line, calls in order.calls.items():
            if calls:
                out[f"{file}:{line}"] = calls
    return out


def _parse(path: str, uid: int | None) -> ast.Module | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        readable = st.st_mode & stat.S_IROTH or (uid is not None and st.st_uid == uid)
        if not stat.S_ISREG(st.st_mode) or not readable or st.st_size > MAX_BYTES:
            return None
        with os.fdopen(fd, "rb", closefd=False) as fh:
            source = fh.read(MAX_BYTES + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None  # edited since it was loaded, or not Python: no order from it


_COMPREHENSIONS = {ast.ListComp: "<listcomp>", ast.SetComp: "<setcomp>", ast.DictComp: "<dictcomp>"}


class _CallOrder(ast.NodeVisitor):
    """The calls that begin on each of ``lines``, in the order Python runs them: a call's
    callee and arguments before the call itself, an assignment's value before its target.
    A lambda's or a generator's body runs later, inside its own frame: not visited. A
    comprehension's body runs in a frame of its own (``<listcomp>``, Python 3.11 and
    before) or inline (3.12 and after): both are kept, its body's calls first."""

    def __init__(self, lines: set[int]) -> None:
        self.lines = lines
        self.calls: dict[int, list[tuple[str, CallKind]]] = {}

    def _add(self, node: ast.expr, name: str, kind: CallKind) -> None:
        if node.lineno in self.lines:
            self.calls.setdefault(node.lineno, []).append((name, kind))

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        name = func.id if isinstance(func, ast.Name) else ""
        if isinstance(func, ast.Attribute):
            name = func.attr
        kind = ""
        if isinstance(func, ast.Name) and name in _BUILTINS:
            given = [*node.args, *(k.value for k in node.keywords)]
            passes_function = any(
                isinstance(a, ast.Name | ast.Attribute | ast.Lambda) for a in given
            )
            kind = "callback" if passes_function else "builtin"
        self._add(node, name, kind)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.visit(node.value)
        for t in node.targets:
            self.visit(t)

    def visit_AugAssign(self, node: ast.AugAssign) -> None:
        self.visit(node.value)
        self.visit(node.target)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.visit(node.value)
        self.visit(node.target)

    def visit_Dict(self, node: ast.Dict) -> None:
        for k, v in zip(node.keys, node.values, strict=True):
            if k is not None:
                self.visit(k)
            self.visit(v)

    def visit_Lambda(self, node: ast.Lambda) -> None:
        pass

    def visit_GeneratorExp(self, node: ast.GeneratorExp) -> None:
        pass

    def _comprehension(self, node: ast.ListComp | ast.SetComp | ast.DictComp) -> None:
        for gen in node.generators:  # the loops first, then what each turn makes
            self.visit(gen)
        for part in (node.key, node.value) if isinstance(node, ast.DictComp) else (node.elt,):
            self.visit(part)
        self._add(node, _COMPREHENSIONS[type(node)], "")

    visit_ListComp = _comprehension
    visit_SetComp = _comprehension
    visit_DictComp = _comprehension
