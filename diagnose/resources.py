"""Where the data that ships with diagnose lives: rules/, templates/, samples/; and where
diagnose keeps what it caches between runs (:func:`cache_dir`).

In a wheel they are copied into ``diagnose/_data/`` (see ``pyproject.toml``); in a source
checkout or an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

import os
from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """Return the directory of the shipped data folder ``name`` (rules, templates, samples)."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise FileNotFoundError(
        f"diagnose's {name}/ folder is missing from this installation ({_PACKAGE}); reinstall diagnose"
    )


def rules_dir() -> Path:
    return data_dir("rules")


def templates_dir() -> Path:
    return data_dir("templates")


def samples_dir() -> Path:
    return data_dir("samples")


def cache_dir() -> Path:
    """diagnose's cache (perf's probe, the poll() fix for perf): ``$XDG_CACHE_HOME/diagnose``
    where that is an absolute path, else ``~/.cache/diagnose``. Its users check that it is
    the user's alone before they read from it (collect/perf/probe.py, pollfix.py)."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "diagnose"
