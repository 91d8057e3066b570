"""Running diagnose (and a sample) as an unprivileged user, wherever the checkout lives.

A clone in /root, or in a 0700 ``mktemp -d`` folder, is unreadable to ``nobody``: neither the
virtual environment's interpreter nor the package can be reached from there. So the tests
that switch users get a world-readable folder of their own holding

- ``site/``: the diagnose package, rules/, templates/ and samples/, and every distribution
  diagnose (and the samples, through NumPy) imports, hard-linked from this environment
  (copied where a hard link cannot be made), put first on ``PYTHONPATH``;
- an interpreter ``nobody`` can start, of this interpreter's version (the compiled
  extensions must match): this one when ``nobody`` can run it, else a system one of the
  same version, else a hard-linked copy of this interpreter's installation.

Nothing is skipped silently: a host where none of this works fails with the reason.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement

from tests.conftest import ROOT

NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
VERSION = f"{sys.version_info[0]}.{sys.version_info[1]}"


@dataclass
class Unprivileged:
    python: str
    base: Path  # world-readable; removed at the end
    env: dict[str, str]

    def diagnose_argv(self, *args: str) -> list[str]:
        return [*NOBODY, self.python, "-s", "-m", "diagnose", *args]

    def sample_argv(self, name: str, *args: str) -> list[str]:
        return [*NOBODY, self.python, "-s", str(self.base / "site" / "samples" / f"{name}.py"), *args]  # fmt: skip

    def run(self, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.diagnose_argv(*args),
            capture_output=True,
            text=True,
            timeout=timeout,
            cwd=str(self.base),
            env=self.env,
            check=False,
        )


def _link_or_copy(src: str, dst: str) -> None:
    """A hard link (instant, no space) to a file others may read; a readable copy otherwise
    (a link shares the file's mode: never change the original's)."""
    if os.stat(src).st_mode & 0o004:
        with contextlib.suppress(OSError):
            os.link(src, dst)
            return
    shutil.copy2(src, dst)
    os.chmod(dst, os.stat(dst).st_mode | 0o444 | (0o111 if os.access(src, os.X_OK) else 0))


def _distributions(roots: tuple[str, ...]) -> set[str]:
    """Names of ``roots`` and everything they require in this environment (no extras)."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        dist = metadata.distribution(todo.pop())
        name = dist.metadata["Name"].lower()
        if name in seen:
            continue
        seen.add(name)
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return seen


def _copy_site(site: Path) -> None:
    for name in ("diagnose", "rules", "templates", "samples"):
        shutil.copytree(
            ROOT / name,
            site / name,
            copy_function=_link_or_copy,
            ignore=shutil.ignore_patterns("__pycache__"),
        )
    for name in sorted(_distributions(("diagnose", "numpy")) - {"diagnose"}):
        dist = metadata.distribution(name)
        for f in dist.files or []:
            src = Path(str(dist.locate_file(f)))
            if ".." in f.parts or not src.is_file():
                continue  # console scripts and the like, outside site-packages
            dst = site / f
            dst.parent.mkdir(parents=True, exist_ok=True)
            if not dst.exists():
                _link_or_copy(str(src), str(dst))


def _runs_as_nobody(python: str, env: dict[str, str]) -> bool:
    try:
        res = subprocess.run(
            [
                *NOBODY,
                python,
                "-s",
                "-c",
                "import sys, numpy, diagnose; print('%d.%d' % sys.version_info[:2])",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd="/",
            env=env,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return res.returncode == 0 and res.stdout.strip() == VERSION


def _copy_interpreter(dest: Path) -> tuple[str, dict[str, str]]:
    """This interpreter's installation (sys.base_prefix, without its site-packages),
    hard-linked into ``dest``; its shared library found through LD_LIBRARY_PATH."""
    prefix = Path(sys.base_prefix)
    shutil.copytree(
        prefix,
        dest,
        symlinks=True,
        copy_function=_link_or_copy,
        ignore=shutil.ignore_patterns("site-packages", "test", "__pycache__", "*.a"),
    )
    exe = Path(getattr(sys, "_base_executable", sys.executable)).resolve()
    python = dest / exe.relative_to(prefix.resolve())
    libdir = sysconfig.get_config_var("LIBDIR") or str(prefix / "lib")
    lib = dest / Path(libdir).resolve().relative_to(prefix.resolve())
    return str(python), {"LD_LIBRARY_PATH": str(lib)}


def _open_up(path: Path) -> None:
    """Folders we made: readable by all (the files are, see _link_or_copy)."""
    for p in [path, *path.rglob("*")]:
        if p.is_dir() and not p.is_symlink():
            p.chmod(0o755)


def _reachable(path: Path) -> bool:
    return all(p.stat().st_mode & 0o001 for p in path.parents)


@contextlib.contextmanager
def unprivileged() -> Iterator[Unprivileged]:
    base = Path(tempfile.mkdtemp(prefix="diagnose-nobody-"))
    try:
        if not _reachable(base):
            raise AssertionError(
                f"the unprivileged user cannot reach {base.parent}: set TMPDIR to a folder "
                "others may enter (/tmp)"
            )
        site = base / "site"
        _copy_site(site)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "PYTHONPATH": str(site),
            "PYTHONDONTWRITEBYTECODE": "1",
            "LANG": "C.UTF-8",
        }
        _open_up(base)
        candidates = [sys.executable, os.path.realpath(sys.executable),
                      getattr(sys, "_base_executable", ""), f"/usr/bin/python{VERSION}",
                      f"/usr/local/bin/python{VERSION}", shutil.which(f"python{VERSION}") or ""]  # fmt: skip
        found = next((p for p in dict.fromkeys(candidates) if p and _runs_as_nobody(p, env)), "")
        if not found:
            found, extra = _copy_interpreter(base / "python")
            env.update(extra)
            _open_up(base / "python")
            if not _runs_as_nobody(found, env):
                raise AssertionError(
                    f"no Python {VERSION} interpreter the unprivileged user can run: tried "
                    f"{', '.join(p for p in dict.fromkeys(candidates) if p)} and a copy of "
                    f"{sys.base_prefix} in {base / 'python'}"
                )
        yield Unprivileged(found, base, env)
    finally:
        shutil.rmtree(base, ignore_errors=True)
