"""The order of calls made on the model call's own line, read from the running service's
source: a zoo service (samples/services/mixed_textclean_model_lock: FastAPI on uvicorn,
locust's load) whose handler is ``return {"queue": int(score(clean(t.text))) % 7}``, with
``clean`` an alias of ``zoolib.textwork.prepare``. The capture keeps the line's calls in
the order Python runs them; the analysis places the cleaning before the model by them,
however few requests py-spy saw pass through the line. (The rule itself, on hand-built
stacks: tests/unit/test_analysis_stages.py; the reading: tests/unit/test_linecalls.py.)"""

from __future__ import annotations

import json

from benchmarks.zoo import running, select, start_load
from tests.conftest import require_locust
from tests.e2e.cli import run_cli


def test_the_cleaning_on_the_model_call_s_line_is_placed_before_it_by_the_source(tmp_path):
    require_locust()
    s = select(["mixed_textclean_model_lock"])[0]
    app = s.dir / "app.py"
    line = next(
        i
        for i, text in enumerate(app.read_text().splitlines(), 1)
        if "score(clean(t.text))" in text
    )
    out = tmp_path / "b"
    with running(s, None, tmp_path / "svc") as run:
        load = start_load(run, 30, tmp_path / "svc")
        try:
            res = run_cli(
                "attach", str(run.pid), "-d", "4", "--collectors", "proc,pyspy",
                "--format", "json", "-o", str(out),
            )  # fmt: skip
        finally:
            load.stop()
    assert res.returncode in (0, 5), res.stderr
    # the capture kept the line's calls, in the order they run (int is a builtin)
    calls = json.loads((out / "python" / "calls.json").read_text())
    key = next(k for k in calls if k.endswith(f"/mixed_textclean_model_lock/app.py:{line}"))
    assert calls[key] == [["clean", ""], ["score", ""], ["int", "builtin"]]
    # and the analysis placed what the line's other call ran (prepare) before the model
    structure = json.loads((out / "report.json").read_text())["oncpu"]["structure"]
    placed = {(x["line"], x["call"]): x["order"] for x in structure["same_line_by_source"]}
    assert placed[(f"handle ({key})", "prepare")] == "pre", structure
