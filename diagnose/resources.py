"""Where the data that ships with diagnose lives: rules/, templates/, samples/.

In a wheel they are copied into ``diagnose/_data/`` (see ``pyproject.toml``); in a source
checkout or an editable install they are the top-level folders of the repository.
"""

from __future__ import annotations

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
