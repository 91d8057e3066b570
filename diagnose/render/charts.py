"""Data for the HTML report's charts and flame graphs, from the analysis."""

from __future__ import annotations

from typing import Any

from diagnose.analyse.metrics import Analysis
from diagnose.render.model import jsonable


def chart_data(a: Analysis) -> dict[str, Any]:
    return jsonable({"series": a.series})
