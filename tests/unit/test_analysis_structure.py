"""The package's shape, read from its source: no import cycle (between modules, nor between
top-level packages), no module reaching into another's private names, no function of 80 lines
or more, and data flowing one way (collect -> bundle -> analyse -> verdict -> render -> app,
the commands' orchestration, which nothing below imports)."""

from __future__ import annotations

import ast
from pathlib import Path

from tests.conftest import ROOT

PACKAGE = ROOT / "diagnose"
#: what the analysis may import from diagnose: the bundle it reads and the parsers of its files
ANALYSE_MAY_IMPORT = ("diagnose.analyse", "diagnose.bundle", "diagnose.formats",
                      "diagnose.errors", "diagnose.resources", "diagnose.tomlfile",
                      "diagnose.words")  # fmt: skip


def _module(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: Path, top_level_only: bool) -> list[tuple[str, list[str]]]:
    """(module, names) of each ``import``/``from ... import`` in ``path``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    out = []
    for node in nodes:
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            out.append((node.module, [a.name for a in node.names]))
        elif isinstance(node, ast.Import):
            out += [(a.name, []) for a in node.names]
    return out


MODULES = {_module(p): p for p in PACKAGE.rglob("*.py")}


def _graph() -> dict[str, set[str]]:
    """Module -> the diagnose modules it imports (at the top or inside a function)."""
    graph: dict[str, set[str]] = {}
    for mod, path in MODULES.items():
        deps = set()
        for target, names in _imports(path, top_level_only=False):
            # `from pkg import module` imports the module; `from module import name` the module
            for candidate in [f"{target}.{n}" for n in names] + [target]:
                if candidate in MODULES and candidate != mod:
                    deps.add(candidate)
                    break
        graph[mod] = deps
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The loops of ``graph`` that a depth-first walk meets (none when there is none)."""
    state: dict[str, int] = {}
    cycles: list[list[str]] = []

    def visit(mod: str, stack: list[str]) -> None:
        state[mod] = 1
        for dep in sorted(graph[mod]):
            if state.get(dep) == 1:
                cycles.append([*stack[stack.index(dep) :], dep])
            elif dep not in state:
                visit(dep, [*stack, dep])
        state[mod] = 2

    for mod in sorted(graph):
        if mod not in state:
            visit(mod, [mod])
    return cycles


def test_no_import_cycle():
    # every import counts, those inside functions too: a lazy import is how a cycle hides
    assert _cycles(_graph()) == []


def _package(mod: str) -> str:
    """``diagnose.render.sweep`` -> ``diagnose.render``; a top-level module is its own."""
    return ".".join(mod.split(".")[:2])


def test_no_import_cycle_between_top_level_packages():
    # modules may avoid a loop while their packages form one (render/ importing a module of
    # sweep/ that imports render/ again): data then flows both ways between the rooms
    packages: dict[str, set[str]] = {}
    for mod, deps in _graph().items():
        if mod == "diagnose":
            continue
        out = packages.setdefault(_package(mod), set())
        out |= {_package(d) for d in deps if d != "diagnose"} - {_package(mod)}
    assert _cycles(packages) == []


#: the rooms the commands' orchestration (diagnose/app/) puts together: they get data from
#: it and never import it
BELOW_APP = ("diagnose.render", "diagnose.verdict", "diagnose.analyse", "diagnose.collect",
             "diagnose.bundle")  # fmt: skip


def test_nothing_below_app_imports_it():
    offenders = [
        f"{mod} imports {target}"
        for mod, path in MODULES.items()
        if _package(mod) in BELOW_APP
        for target, names in _imports(path, top_level_only=False)
        if target == "diagnose.app"
        or target.startswith("diagnose.app.")
        or (target == "diagnose" and "app" in names)
    ]
    assert offenders == []


def test_no_module_imports_another_s_private_names():
    offenders = [
        f"{mod}: from {target} import {name}"
        for mod, path in MODULES.items()
        for target, names in _imports(path, top_level_only=False)
        for name in names
        if target.startswith("diagnose") and name.startswith("_") and name != "__version__"
    ]
    assert offenders == []


#: a function this long does several things: split it (docstrings and comments count)
MAX_FUNCTION_LINES = 80


def test_every_function_is_shorter_than_80_lines():
    long = [
        f"{path.relative_to(ROOT)}:{node.lineno} {node.name} ({node.end_lineno - node.lineno + 1} lines)"
        for path in PACKAGE.rglob("*.py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef))
        and (node.end_lineno or node.lineno) - node.lineno + 1 >= MAX_FUNCTION_LINES
    ]
    assert long == []


def test_the_analysis_reads_bundles_never_collectors_rules_or_renderers():
    offenders = [
        f"{mod} imports {target}"
        for mod, path in MODULES.items()
        if mod.startswith("diagnose.analyse")
        for target, _ in _imports(path, top_level_only=False)
        if target.startswith("diagnose") and not target.startswith(ANALYSE_MAY_IMPORT)
    ]
    assert offenders == []
