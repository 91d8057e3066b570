"""The overhead benchmark's variant names: another checkout's diagnose, side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.overhead import variant


def test_a_checkout_s_diagnose_runs_with_that_checkout_first_on_the_path(tmp_path: Path):
    (tmp_path / "diagnose").mkdir()
    argv = variant(f"diagnose@{tmp_path} --collectors proc", {}, 10)(123, Path("/o"))
    assert argv[:2] == ["env", f"PYTHONPATH={tmp_path.resolve()}"]
    assert argv[-8:] == ["attach", "123", "-d", "10", "-o", "/o", "--collectors", "proc"]
    # this checkout's diagnose: no environment change
    assert variant("diagnose", {}, 10)(1, Path("/o"))[0] != "env"
    assert variant("nice diagnose@" + str(tmp_path), {}, 10)(1, Path("/o"))[:5] == [
        "nice", "-n", "10", "env", f"PYTHONPATH={tmp_path.resolve()}"
    ]  # fmt: skip


@pytest.mark.parametrize("name", ["diagnose@/nonexistent", "perf@/tmp", "dignose"])
def test_an_unknown_variant_or_checkout_is_refused(name: str):
    with pytest.raises(SystemExit, match="unknown variant"):
        variant(name, {}, 10)
