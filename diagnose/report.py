"""The pipeline after capture: bundle -> analysis -> verdict -> report files.

``diagnose report`` and ``diagnose attach`` both call :func:`write_reports`; it reads the
bundle alone, so editing rules and re-running ``diagnose report`` recomputes everything.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from diagnose.analyse import Analysis, analyse
from diagnose.bundle.manifest import CollectorStatus
from diagnose.bundle.reader import Bundle
from diagnose.bundle.writer import write_json_atomic, write_text_atomic
from diagnose.errors import OutputError, UsageError
from diagnose.render.model import build_report
from diagnose.verdict import judge, load_rules

FORMATS = ("html", "md", "json")
FILENAMES = {"html": "report.html", "md": "report.md", "json": "report.json"}


@dataclass
class Diagnosis:
    bundle: Bundle
    analysis: Analysis
    report: dict[str, Any]


def parse_formats(text: str | Sequence[str]) -> list[str]:
    items = text.split(",") if isinstance(text, str) else list(text)
    out = []
    for item in items:
        f = item.strip().lower()
        if f == "markdown":
            f = "md"
        if not f:
            continue
        if f not in FORMATS:
            raise UsageError(f"unknown report format {f!r}; choose from {', '.join(FORMATS)}")
        if f not in out:
            out.append(f)
    if not out:
        raise UsageError("no report format given")
    return out


def diagnose(bundle_path: Path, rules_dirs: Iterable[Path] = ()) -> Diagnosis:
    bundle = Bundle.open(bundle_path)
    extra = list(rules_dirs)
    analysis = analyse(bundle, extra[-1] if extra else None)
    ruleset = load_rules(extra)
    partial = {
        n for n, rec in bundle.manifest.collectors.items() if rec.status is CollectorStatus.PARTIAL
    }
    if bundle.manifest.state != "complete":
        partial |= set(bundle.manifest.collectors)
    verdict = judge(ruleset, analysis.metrics, analysis.unmeasured, partial)
    report = build_report(bundle, analysis, verdict, ruleset)
    return Diagnosis(bundle, analysis, report)


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) so that ``path`` is either old or complete."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
    write_text_atomic(path, text)


def output_paths(
    bundle_path: Path,
    formats: list[str],
    out: Path | None,
    filenames: Mapping[str, str] = FILENAMES,
) -> dict[str, Path]:
    if out is None:
        return {f: bundle_path / filenames[f] for f in formats}
    suffixes = {".html": "html", ".htm": "html", ".md": "md", ".json": "json"}
    if len(formats) == 1 and out.suffix.lower() in suffixes:
        return {formats[0]: out}
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out} is a file; with several formats give a directory")
    return {f: out / filenames[f] for f in formats}


def write_reports(
    bundle_path: Path,
    formats: list[str] | None = None,
    out: Path | None = None,
    rules_dirs: Iterable[Path] = (),
) -> tuple[Diagnosis, dict[str, Path]]:
    formats = formats or list(FORMATS)
    d = diagnose(bundle_path, rules_dirs)
    paths = output_paths(bundle_path, formats, out)
    # the small reports first: on a disk that fills up, they are the ones that fit
    for fmt, path in sorted(paths.items(), key=lambda kv: kv[0] == "html"):
        if fmt == "json":
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise OutputError(f"cannot create {path.parent}: {exc.strerror}") from exc
            write_json_atomic(path, d.report)
        elif fmt == "md":
            from diagnose.render.markdown import render_markdown

            write_text(path, render_markdown(d.report))
        elif fmt == "html":
            from diagnose.render.charts import chart_data
            from diagnose.render.html import render_html

            write_text(path, render_html(d.report, chart_data(d.analysis)))
    return d, paths


def report_json(d: Diagnosis) -> str:
    return json.dumps(d.report, indent=1)
