"""Analyses beyond the core ones (perf's native and scheduler views, ...).

Each is a function ``(data: BundleData, frames: FrameRules, analysis: Analysis) -> None``
that adds metrics (registered in :mod:`diagnose.analyse.registry`) and report tables to
``analysis``. They run after the core metrics, in this order.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from diagnose.analyse.perf_metrics import analyse_perf  # isort: skip - its metrics list first
from diagnose.analyse.false_sharing import analyse_false_sharing  # isort: skip

ANALYSES: list[Callable[[Any, Any, Any], None]] = [analyse_perf, analyse_false_sharing]
