"""Compiling the samples' C sources at run time (gcc or cc), cached by the source's hash.

The build goes to ``$XDG_CACHE_HOME/diagnose-samples`` (``/tmp/diagnose-samples`` without
it) under a name that holds the hash of the source and flags, so an edited source is
rebuilt and concurrent runs never see a half-written file (each compiles to a temporary
name, then renames).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CFLAGS = ["-O2", "-g", "-pthread", "-fno-omit-frame-pointer"]


def cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or tempfile.gettempdir()
    path = Path(root) / "diagnose-samples"
    path.mkdir(parents=True, exist_ok=True)
    return path


def build(source: str, shared: bool = False) -> Path:
    """Compile ``samples/SOURCE`` into an executable (or a shared library); its path."""
    src = HERE / source
    flags = [*CFLAGS, "-shared", "-fPIC"] if shared else CFLAGS
    digest = hashlib.sha256(src.read_bytes() + " ".join(flags).encode()).hexdigest()[:16]
    suffix = ".so" if shared else ""
    out = cache_dir() / f"{src.stem}-{digest}{suffix}"
    if out.exists():
        return out
    cc = shutil.which("gcc") or shutil.which("cc")
    if cc is None:
        sys.exit(f"{source} is compiled at run time: install gcc (apt-get install -y gcc)")
    tmp = out.with_name(f".{out.name}.{os.getpid()}")
    result = subprocess.run(
        [cc, *flags, "-o", str(tmp), str(src)], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        sys.exit(f"compiling {source} failed:\n{result.stderr[-2000:]}")
    os.replace(tmp, out)
    return out
