"""Blind batch 18's s05 class on a real process (tests/targets/pool_ngrams.py): eight pool
threads count hashed n-grams in plain Python, then score them with one NumPy dot (a few
percent of the CPU: no model call to be seen). Judged by its names, the threads holding the
GIL were preprocessing because the function is called `featurize`; batch 16's s10, the same
shape under other names, was judged lock/gil. Without a model call there is no stage to be
before, so the GIL holders are the service's Python work whatever they are called: the same
code under `featurize` and under `step` gets the same verdict."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import ROOT
from tests.e2e.cli import attach_to_target

pytestmark = pytest.mark.e2e
TARGET = str(ROOT / "tests" / "targets" / "pool_ngrams.py")


@pytest.mark.parametrize("name", ["featurize", "step"])
def test_without_a_model_call_a_function_s_name_makes_no_stage(tmp_path: Path, name: str):
    report = attach_to_target(TARGET, name, tmp_path / name)
    m, v = report["metrics"], report["verdict"]
    assert m["model_call_threads"] == 0, m["model_call_site"]
    assert m["gil_holder_preprocess_share"] == 0.0, m["gil_holder_top_site"]
    ranked = [(r["category"], r["kind"]) for r in v["ranking"] if r["category"] != "scheduling"]
    assert all(category != "preprocess" for category, _ in ranked), v["ranking"]
    # beside a busy neighbour the cores taken from it may be all the rules can name (suite
    # S1, load average 8-10 on 2 cores: scheduling/cpu_contention alone)
    contended = any(r["rule"] == "scheduling.cpu_contention" for r in v["ranking"])
    assert (ranked and ranked[0] == ("lock", "gil")) or (contended and not ranked), v["ranking"]
