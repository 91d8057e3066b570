"""Settings shared by the fuzz tests (tests/unit/test_fuzz_*.py).

By default each property runs a fixed, derandomized set of examples, so CI is repeatable.
``DIAGNOSE_FUZZ=N`` runs N times as many examples from random seeds: the way to hunt for
new failures (Hypothesis keeps any it finds in .hypothesis/ and replays them first).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

_SCALE = int(os.environ.get("DIAGNOSE_FUZZ", "0") or 0)


def fuzz(examples: int) -> settings:
    return settings(
        max_examples=examples * max(1, _SCALE),
        derandomize=_SCALE == 0,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
