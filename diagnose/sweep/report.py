"""The pipeline after a sweep: record + step bundles -> step reports -> knee comparisons ->
the sweep report (JSON, Markdown, HTML). ``diagnose sweep`` calls it when the steps are done;
``diagnose report SWEEPDIR`` calls it with ``rediagnose=True`` (every step's report and the
comparisons are recomputed from the bundles, e.g. after editing rules)."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from diagnose.bundle.safedir import SafeDir
from diagnose.compare import compare, write_comparison
from diagnose.errors import BadBundle, DiagnoseError
from diagnose.outcome import from_load
from diagnose.render.schema import Report
from diagnose.report import load_report, open_output, write_reports
from diagnose.sweep.analysis import find_knee
from diagnose.sweep.model import build_sweep_report, step_point
from diagnose.sweep.runner import RECORD, SCHEMA, SCHEMA_VERSION, STEP_FORMATS

FILENAMES = {"html": "report.html", "md": "report.md", "json": "report.json"}


def is_sweep_dir(path: Path) -> bool:
    return (Path(path) / RECORD).is_file()


def load_record(sweep_dir: Path) -> dict[str, Any]:
    path = Path(sweep_dir) / RECORD
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise BadBundle(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadBundle(f"{path} is not valid JSON: {exc}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA:
        raise BadBundle(f"{path} is not a diagnose sweep record")
    if int(data.get("schema_version") or 0) > SCHEMA_VERSION:
        raise BadBundle(
            f"{path} is of a newer schema ({data.get('schema_version')}); upgrade diagnose"
        )
    if not isinstance(data.get("settings"), list):
        raise BadBundle(f"{path} has no settings list")
    for s in data["settings"]:
        if not isinstance(s, dict) or not isinstance(s.get("steps"), list) or "slug" not in s:
            raise BadBundle(f"{path}: a setting is malformed")
        for step in s["steps"]:
            if not isinstance(step, dict) or not isinstance(step.get("users"), int):
                raise BadBundle(f"{path}: a step is malformed")
    return data


def _bundle(sweep_dir: Path, step: Mapping[str, Any]) -> Path | None:
    rel = step.get("bundle")
    if not rel:
        return None
    p = (sweep_dir / str(rel)).resolve()
    if not p.is_relative_to(sweep_dir.resolve()) or not p.is_dir():
        return None
    return p


def step_figures(bundle: Path) -> dict[str, Any] | None:
    """The load generator's figures of the sweep step whose bundle this is (the record is
    four levels up: SWEEPDIR/steps/SLUG/users-N/bundle), as compare shows them; None when the
    bundle is not a sweep step's or its step has no figures."""
    bundle = Path(bundle).resolve()
    for sweep_dir in list(bundle.parents)[:4]:
        if not is_sweep_dir(sweep_dir):
            continue
        try:
            record = load_record(sweep_dir)
        except BadBundle:
            return None
        for s in record["settings"]:
            for step in s["steps"]:
                if _bundle(sweep_dir, step) == bundle and isinstance(step.get("load"), dict):
                    users = step["users"]
                    return from_load(step["load"], f"sweep step, {users} users ({RECORD})")
        return None
    return None


def step_reports(
    sweep_dir: Path,
    record: Mapping[str, Any],
    rediagnose: bool = False,
    rules_dirs: Iterable[Path] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[tuple[str, int], Report | None]:
    """Each step's report: read from its bundle, or recomputed (``rediagnose``)."""
    out: dict[tuple[str, int], Report | None] = {}
    rules = list(rules_dirs)
    for s in record["settings"]:
        for step in s["steps"]:
            key = (s["slug"], int(step["users"]))
            bundle = _bundle(sweep_dir, step)
            out[key] = None
            if bundle is None:
                continue
            try:
                if rediagnose:
                    if progress:
                        progress(f"diagnosing {s['name']}, {step['users']} users")
                    d, _ = write_reports(bundle, list(STEP_FORMATS), None, rules)
                    out[key] = d.report
                elif (bundle / "report.json").is_file():
                    out[key] = load_report(bundle / "report.json")
            except (DiagnoseError, OSError, ValueError):
                out[key] = None  # the row says "no verdict"; the figures stand
    return out


def knee_comparisons(
    sweep_dir: Path,
    record: Mapping[str, Any],
    rules_dirs: Iterable[Path] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per setting, the comparison of the knee's step with the next one (compare.py), written
    to ``knee/SLUG/compare.*``; a string says why there is none."""
    out: dict[str, Any] = {}
    for s in record["settings"]:
        steps = s["steps"]
        knee = find_knee([step_point(x) for x in steps])
        if not knee.found or knee.index is None or knee.next_index is None:
            continue
        before = _bundle(sweep_dir, steps[knee.index])
        after = _bundle(sweep_dir, steps[knee.next_index])
        if before is None or after is None:
            out[s["slug"]] = "a step on either side of the knee has no bundle to compare"
            continue
        if progress:
            progress(f"{s['name']}: comparing {knee.users} and {knee.next_users} users")
        try:
            figures = tuple(
                from_load(steps[i]["load"], f"sweep step, {steps[i]['users']} users")
                if isinstance(steps[i].get("load"), dict)
                else None
                for i in (knee.index, knee.next_index)
            )
            c = compare(before, after, rules_dirs, (figures[0], figures[1]))
            write_comparison(c, after, list(STEP_FORMATS), sweep_dir / "knee" / s["slug"])
        except DiagnoseError as exc:
            out[s["slug"]] = f"the comparison across the knee failed: {exc}"
            continue
        out[s["slug"]] = c
    return out


def render(model: Mapping[str, Any], fmt: str) -> str:
    from diagnose.render.sweep import render_sweep_html, render_sweep_markdown

    if fmt == "json":
        return json.dumps(model, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    if fmt == "md":
        return render_sweep_markdown(model)
    return render_sweep_html(model)


def write_sweep_reports(
    sweep_dir: Path,
    formats: list[str] | None = None,
    rules_dirs: Iterable[Path] = (),
    out: Path | None = None,
    rediagnose: bool = False,
    progress: Callable[[str], None] | None = None,
) -> tuple[dict[str, Any], dict[str, Path]]:
    """Build the sweep's report and write it (into SWEEPDIR, or ``out``)."""
    sweep_dir = Path(sweep_dir)
    rules = list(rules_dirs)
    record = load_record(sweep_dir)
    reports = step_reports(sweep_dir, record, rediagnose, rules, progress)
    compares = knee_comparisons(sweep_dir, record, rules, progress)
    model = build_sweep_report(record, reports, compares, str(sweep_dir.resolve()))
    formats = formats or list(FILENAMES)
    with SafeDir.open(sweep_dir) as held:  # written through this descriptor, never by path
        target = open_output(held, formats, out, FILENAMES)
        # the small reports first: on a disk that fills up, they are the ones that fit
        for fmt in sorted(formats, key=lambda f: f == "html"):
            target.write(fmt, render(model, fmt))
        return model, target.paths()
