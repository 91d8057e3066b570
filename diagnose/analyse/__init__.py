"""Analysis: from a bundle to named metrics and the tables a report draws. Pure: it reads
the bundle only, never the live target nor the host it runs on, so a bundle can be
analysed anywhere. docs/design.md describes the layout; pipeline.py lists the steps."""

from __future__ import annotations

from pathlib import Path

from diagnose.analyse.frames import frame_rules
from diagnose.analyse.load import load
from diagnose.analyse.model import Analysis
from diagnose.analyse.pipeline import analyse_data
from diagnose.bundle.reader import Bundle


def analyse(bundle: Bundle, rules_dir: Path | None = None) -> Analysis:
    return analyse_data(load(bundle), frame_rules(rules_dir))


__all__ = ["Analysis", "analyse"]
