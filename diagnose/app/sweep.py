"""The pipeline after a sweep: record + step bundles -> step reports -> knee comparisons ->
the sweep report (JSON, Markdown, HTML). ``diagnose sweep`` calls it when the steps are done;
``diagnose report SWEEPDIR`` calls it with ``rediagnose=True`` (every step's report and the
comparisons are recomputed from the bundles, e.g. after editing rules)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from diagnose.app.compare import compare, write_comparison
from diagnose.app.output import OutputTarget, open_output
from diagnose.app.report import write_reports
from diagnose.app.reporters import file_names, formats_of, write_formats
from diagnose.app.sweep_runner import STEP_FORMATS
from diagnose.bundle.reader import Bundle
from diagnose.bundle.safedir import SafeDir
from diagnose.errors import BadBundle, DiagnoseError
from diagnose.render.schema import Report, parse_report
from diagnose.sweep.analysis import find_knee
from diagnose.sweep.model import build_sweep_report, step_point
from diagnose.sweep.record import RECORD, is_sweep_dir, load_record
from diagnose.verdict.outcome import from_load


def _bundle(sweep_dir: Path, step: Mapping[str, Any]) -> Path | None:
    """Where the step's bundle is, for matching a bundle path to its step (read only)."""
    rel = step.get("bundle")
    if not rel:
        return None
    p = (sweep_dir / str(rel)).resolve()
    if not p.is_relative_to(sweep_dir.resolve()) or not p.is_dir():
        return None
    return p


def _open_bundle(held: SafeDir, step: Mapping[str, Any]) -> Bundle | None:
    """The step's bundle, reached from the sweep directory's descriptor without following
    a link (the record's paths are checked relative paths: record.py)."""
    rel = step.get("bundle")
    if not rel:
        return None
    try:
        return Bundle.open(held.sub(str(rel)))
    except (OSError, ValueError):
        return None


def step_figures(bundle: Path) -> dict[str, Any] | None:
    """The load generator's figures of the sweep step whose bundle this is (the record is
    four levels up: SWEEPDIR/steps/SLUG/users-N/bundle), as compare shows them; None when the
    bundle is not a sweep step's or its step has no figures."""
    bundle = Path(bundle).resolve()
    for sweep_dir in list(bundle.parents)[:4]:
        if not is_sweep_dir(sweep_dir):
            continue
        try:
            record = load_record(sweep_dir, trusted_only=True)
        except BadBundle:
            return None
        for s in record["settings"]:
            for step in s["steps"]:
                if _bundle(sweep_dir, step) == bundle and isinstance(step.get("load"), dict):
                    users = step["users"]
                    where = f"sweep step, {users} users ({sweep_dir / RECORD})"
                    return from_load(step["load"], where)
        return None
    return None


def step_reports(
    held: SafeDir,
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
            bundle = _open_bundle(held, step)
            out[key] = None
            if bundle is None:
                continue
            try:
                if rediagnose:
                    if progress:
                        progress(f"diagnosing {s['name']}, {step['users']} users")
                    d, _ = write_reports(bundle, list(STEP_FORMATS), None, rules)
                    out[key] = d.report
                elif bundle.has("report.json"):
                    raw = bundle.read_bytes("report.json")
                    out[key] = parse_report(raw, bundle.path("report.json"))
            except (DiagnoseError, OSError, ValueError):
                out[key] = None  # the row says "no verdict"; the figures stand
    return out


def knee_comparisons(
    held: SafeDir,
    record: Mapping[str, Any],
    rules_dirs: Iterable[Path] = (),
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Per setting, the comparison of the knee's step with the next one (compare.py), written
    to ``knee/SLUG/compare.*`` through the sweep directory's descriptor; a string says why
    there is none."""
    out: dict[str, Any] = {}
    for s in record["settings"]:
        steps = s["steps"]
        knee = find_knee([step_point(x) for x in steps])
        if not knee.found or knee.index is None or knee.next_index is None:
            continue
        before = _open_bundle(held, steps[knee.index])
        after = _open_bundle(held, steps[knee.next_index])
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
            compare_names = file_names("compare")
            c = compare(before, after, rules_dirs, (figures[0], figures[1]))
            names = {f: f"knee/{s['slug']}/{compare_names[f]}" for f in STEP_FORMATS}
            write_comparison(c, OutputTarget(held, names), list(STEP_FORMATS))
        except DiagnoseError as exc:
            out[s["slug"]] = f"the comparison across the knee failed: {exc}"
            continue
        out[s["slug"]] = c
    return out


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
    formats = formats or list(formats_of("sweep"))
    with SafeDir.open(sweep_dir) as held:  # read and written through it, never by path
        reports = step_reports(held, record, rediagnose, rules, progress)
        compares = knee_comparisons(held, record, rules, progress)
        model = build_sweep_report(record, reports, compares, str(sweep_dir.resolve()))
        target = open_output(held, formats, out, file_names("sweep"))
        write_formats("sweep", model, target, formats)
        return model, target.paths()
