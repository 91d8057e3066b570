"""C++ and Rust symbol names, demangled the way ``perf script`` prints them, for the few
thousand distinct names a capture's stacks hold.

``perf script`` demangles every symbol of every library a stack passes through as it loads
the library's symbol table: for libtorch_cpu.so alone that is about 1.6 CPU-s, twice per
capture (the on-CPU samples and the scheduler trace), and three to four times as long
beside a loaded service, all of it between the window's end and the verdict
(docs/performance.md, section 2). With ``--no-demangle`` perf prints the mangled names, and
diagnose demangles the distinct ones in one run of ``c++filt -p`` (binutils): the same text
as perf's (C++ without parameter lists; Rust v0 names with their crate hashes dropped, as
perf prints them), checked on every distinct symbol of a torch capture
(tests/unit/test_demangle.py). Used only where :func:`probe` finds a ``c++filt`` that
demangles both kinds; elsewhere perf demangles, as before.
"""

from __future__ import annotations

import functools
import re
import shutil
import subprocess
from collections.abc import Iterable

from diagnose.spawn import run as spawn_run

#: Itanium C++ (``_Z``) and Rust v0 (``_R``) manglings
MANGLED_PREFIXES = ("_Z", "_R")
_CRATE_HASH = re.compile(r"\[[0-9a-f]{16}\]")
TIMEOUT = 60.0

# one of each kind, and what perf 6.1 prints for it (tests/fixtures/demangle/)
_PROBE = {
    "_Z16THPVariable_WrapON2at10TensorBaseE": "THPVariable_Wrap",
    (
        "_RNvXs3_NtNtCscxzlFi8rOL3_10tokenizers6models9wordpieceNtB5_9WordPiece"
        "NtNtB9_9tokenizer5Model8tokenize"
    ): "<tokenizers::models::wordpiece::WordPiece as tokenizers::tokenizer::Model>::tokenize",
}


def is_mangled(name: str) -> bool:
    return name.startswith(MANGLED_PREFIXES)


def run_cxxfilt(tool: str, names: list[str], timeout: float = TIMEOUT) -> list[str] | None:
    """``names`` through ``tool -p``, one per line, in order; None when it fails."""
    try:
        out = spawn_run([tool, "-p"], timeout, input="\n".join(names) + "\n")
    except (OSError, subprocess.SubprocessError):
        return None
    lines = out.stdout.splitlines()
    if out.returncode != 0 or len(lines) != len(names):
        return None
    return [
        _CRATE_HASH.sub("", line) if n.startswith("_R") else line
        for n, line in zip(names, lines, strict=True)
    ]


@functools.lru_cache(maxsize=1)
def probe() -> str | None:
    """The ``c++filt`` to demangle with, or None (not installed, or it demangles either kind
    differently from perf: then perf demangles)."""
    tool = shutil.which("c++filt")
    if tool is None:
        return None
    names = list(_PROBE)
    got = run_cxxfilt(tool, names, timeout=10.0)
    return tool if got == [_PROBE[n] for n in names] else None


def demangle(names: Iterable[str], tool: str) -> dict[str, str] | None:
    """mangled name -> perf's text, for the mangled ones among ``names`` that ``tool``
    demangles; None if it fails (the names then stay as perf printed them: mangled)."""
    todo = sorted({n for n in names if is_mangled(n)})
    if not todo:
        return {}
    got = run_cxxfilt(tool, todo)
    if got is None:
        return None
    return {m: d for m, d in zip(todo, got, strict=True) if d and d != m}
