"""The pipeline after capture: bundle -> analysis -> verdict -> report files.

``diagnose report`` and ``diagnose attach`` both call :func:`write_reports`; it reads the
bundle alone, so editing rules and re-running ``diagnose report`` recomputes everything.
"""

from __future__ import annotations

import json
import sys
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


#: ``-o -``: the one report asked for goes to stdout
STDOUT = Path("-")


def is_stream(path: Path) -> bool:
    """``-`` (stdout), something that exists and is neither a file nor a directory (a
    pipe, a terminal), or anything under /dev or /proc (``/dev/stdout`` is a link to
    ``/proc/self/fd/1``, a plain file when stdout is redirected to one): written to
    directly. Never replaced by a new file, as a report file is (that would replace the
    link /dev/stdout itself)."""
    if path == STDOUT:
        return True
    try:
        if not path.exists() or path.is_dir():
            return False
        return not path.is_file() or path.absolute().parts[1:2] in (("dev",), ("proc",))
    except OSError:
        return False


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) so that ``path`` is either old or complete; to
    stdout for ``-``, and straight into a stream such as ``/dev/stdout``."""
    if path == STDOUT:
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    if is_stream(path):
        try:
            with path.open("w", encoding="utf-8") as fh:
                fh.write(text)
        except OSError as exc:
            raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc
        return
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
    """Where each format goes. ``out``: None (into the bundle), a directory, or, with one
    format, a file (a name ending .html, .md or .json, or anything that exists and is not a
    directory, such as /dev/stdout), or ``-`` for stdout."""
    if out is None:
        return {f: bundle_path / filenames[f] for f in formats}
    several = len(formats) > 1
    if out == STDOUT or is_stream(out):
        if several:
            raise UsageError(
                f"-o {out} takes one report, not {len(formats)}: choose one with "
                "--format html, md or json"
            )
        return {formats[0]: out}
    suffixes = {".html", ".htm", ".md", ".json"}
    if not several and (out.suffix.lower() in suffixes or (out.exists() and not out.is_dir())):
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
    paths = output_paths(bundle_path, formats, out)  # bad -o is refused before the analysis
    d = diagnose(bundle_path, rules_dirs)
    # the small reports first: on a disk that fills up, they are the ones that fit
    for fmt, path in sorted(paths.items(), key=lambda kv: kv[0] == "html"):
        if fmt == "json" and is_stream(path):
            write_text(path, report_json(d) + "\n")
        elif fmt == "json":
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
    """The report as JSON text, as report.json holds it."""
    return json.dumps(d.report, indent=1, ensure_ascii=False, allow_nan=False, default=str)
