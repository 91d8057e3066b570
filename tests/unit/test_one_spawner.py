"""Every process diagnose starts goes through diagnose/spawn.py (its own session, a death
signal armed before it runs anything): no other module calls subprocess or os to start one."""

from __future__ import annotations

import ast

from tests.conftest import ROOT

STARTERS = {
    ("subprocess", "Popen"), ("subprocess", "run"), ("subprocess", "call"),
    ("subprocess", "check_call"), ("subprocess", "check_output"), ("subprocess", "getoutput"),
    ("os", "system"), ("os", "popen"), ("os", "fork"), ("os", "forkpty"), ("os", "posix_spawn"),
    ("os", "posix_spawnp"), ("os", "execv"), ("os", "execvp"), ("os", "execve"),
    ("os", "spawnv"), ("os", "spawnvp"), ("asyncio", "create_subprocess_exec"),
    ("asyncio", "create_subprocess_shell"),
}  # fmt: skip


def starters(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            if isinstance(owner, ast.Name) and (owner.id, node.func.attr) in STARTERS:
                found.append(f"{owner.id}.{node.func.attr} (line {node.lineno})")
        if isinstance(node, ast.ImportFrom) and node.module in ("subprocess", "os", "asyncio"):
            found += [
                f"from {node.module} import {a.name} (line {node.lineno})"
                for a in node.names
                if (node.module, a.name) in STARTERS
            ]
    return found


def test_only_the_spawner_starts_processes():
    offenders = {
        str(path.relative_to(ROOT)): found
        for path in sorted((ROOT / "diagnose").rglob("*.py"))
        if path.name != "spawn.py" and (found := starters(path.read_text(encoding="utf-8")))
    }
    assert not offenders, offenders


def test_the_check_sees_each_way_to_start_a_process():
    assert starters("import subprocess\nsubprocess.Popen(['x'])\n") == ["subprocess.Popen (line 2)"]
    assert starters("from subprocess import run\n") == ["from subprocess import run (line 1)"]
    assert starters("import os\nos.system('x')\n") == ["os.system (line 2)"]
    assert starters("import subprocess\nsubprocess.DEVNULL\n") == []  # using its names is fine
