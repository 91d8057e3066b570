"""Loading the TOML data files under rules/ with errors that name file and line."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

from diagnose.errors import BadRules

MAX_RULE_FILE_BYTES = 1024 * 1024


class TomlFile:
    """A parsed TOML file that remembers its text, to point at lines in messages."""

    def __init__(self, path: Path, text: str, data: dict[str, Any]) -> None:
        self.path = path
        self.text = text
        self.lines = text.splitlines()
        self.data = data

    @classmethod
    def load(cls, path: Path) -> TomlFile:
        try:
            size = path.stat().st_size
            if size > MAX_RULE_FILE_BYTES:
                raise BadRules(f"{path}:1: file is {size} bytes; rule files are limited to 1 MiB")
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise BadRules(f"{path}:1: not UTF-8 text") from None
        except OSError as exc:
            raise BadRules(f"{path}: cannot read: {exc.strerror}") from exc
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:
            m = re.search(r"line (\d+)", str(exc))
            line = m.group(1) if m else "1"
            msg = str(exc).split(" (at line")[0]
            raise BadRules(f"{path}:{line}: invalid TOML: {msg}") from None
        except RecursionError:
            raise BadRules(f"{path}:1: nested too deeply") from None
        return cls(path, text, data)

    def table_line(self, header: str, index: int) -> int:
        """Line number (1-based) of the ``index``-th ``[[header]]`` table."""
        count = -1
        rx = re.compile(r"^\s*\[\[\s*" + re.escape(header) + r"\s*\]\]")
        for i, line in enumerate(self.lines, 1):
            if rx.match(line):
                count += 1
                if count == index:
                    return i
        return 1

    def key_line(self, key: str, after: int = 1) -> int:
        """Line of the first ``key =`` at or after line ``after`` (in the same table)."""
        rx = re.compile(r"^\s*" + re.escape(key) + r"\s*=")
        for i in range(max(1, after), len(self.lines) + 1):
            line = self.lines[i - 1]
            if i > after and re.match(r"^\s*\[", line):
                break
            if rx.match(line):
                return i
        return after

    def where(self, line: int) -> str:
        return f"{self.path}:{line}"
