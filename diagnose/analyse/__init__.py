"""Analysis: from a bundle to named metrics and the tables a report draws. Pure: it reads
the bundle only, never the live target nor the host it runs on, so a bundle can be
analysed anywhere. docs/design.md describes the layout; pipeline.py lists the steps."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from diagnose.analyse.model import Analysis
    from diagnose.bundle.reader import Bundle


def analyse(bundle: Bundle, rules_dir: Path | None = None, feeds: str = "") -> Analysis:
    """The bundle's analysis; ``feeds``: why its process is the feeding stage of a sibling
    process's model (analyse/service.py), or ""."""
    # imported here, not above: importing the metric catalogue (analyse/registry.py), as the
    # rules and the CLI do, must not import pandas (tests/unit/test_cli_start.py)
    from diagnose.analyse.frames import frame_rules
    from diagnose.analyse.load import load
    from diagnose.analyse.pipeline import analyse_data

    return analyse_data(load(bundle), frame_rules(rules_dir), feeds=feeds)


def __getattr__(name: str) -> Any:
    if name == "Analysis":
        from diagnose.analyse.model import Analysis

        return Analysis
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Analysis", "analyse"]
