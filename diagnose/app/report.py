"""The pipeline after capture: bundle -> analysis -> verdict -> report files.

``diagnose report`` and ``diagnose attach`` both call :func:`write_reports`; it reads the
bundle alone, so editing rules and re-running ``diagnose report`` recomputes everything.
Where the files go: :mod:`diagnose.app.output`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diagnose.analyse import analyse
from diagnose.app.output import OutputTarget, open_directory, open_output
from diagnose.app.reporters import file_names, formats_of, write_formats
from diagnose.app.service import service_section, worker_entries
from diagnose.bundle.manifest import CollectorStatus
from diagnose.bundle.safedir import SafeDir
from diagnose.errors import BadBundle
from diagnose.render.schema import Report, load_report
from diagnose.verdict import judge, load_rules
from diagnose.verdict.ruleset import RuleSet

if TYPE_CHECKING:
    # both need pandas: imported where a bundle is read, so that the CLI starts a capture
    # without them (tests/unit/test_cli_start.py)
    from diagnose.analyse.model import Analysis
    from diagnose.bundle.reader import Bundle


@dataclass
class Diagnosis:
    bundle: Bundle
    analysis: Analysis
    report: Report
    #: a service's other workers (diagnose/app/service.py): each one's entry in workers.json,
    #: its diagnosis (None where it cannot be judged) and why not
    workers: list[tuple[dict[str, Any], Diagnosis | None, str]] = field(default_factory=list)


def open_bundle(bundle_path: Path | Bundle | SafeDir) -> Bundle:
    from diagnose.bundle.reader import Bundle

    return bundle_path if isinstance(bundle_path, Bundle) else Bundle.open(bundle_path)


#: a worker's entry (workers.json), its bundle and analysis (None where unreadable), why not
WorkerAnalysis = tuple[dict[str, Any], "tuple[Bundle, Analysis] | None", str]


@dataclass
class Analysed:
    """A bundle analysed with its service's other workers, ready to be judged by any rule
    set (``judge_service``): the analysis is the costly part, judging is milliseconds."""

    bundle: Bundle
    analysis: Analysis
    others: list[WorkerAnalysis]


def analyse_service(
    bundle_path: Path | Bundle | SafeDir, rules_dir: Path | None = None
) -> Analysed:
    """Analyse the bundle and the bundles of its service's other workers, analyse again
    those that feed a sibling's model as that feeding stage, and count their threads
    together against the cores they share (analyse/service.py)."""
    from diagnose.analyse.frames import frame_rules
    from diagnose.analyse.service import feeding_processes, share_cores

    bundle = open_bundle(bundle_path)
    analysis = analyse(bundle, rules_dir)
    others = _analyse_workers(bundle, rules_dir)
    pids = {int(bundle.manifest.target.pid): (bundle, analysis)}
    pids.update((int(str(e.get("pid"))), w) for e, w, _why in others if w)
    feeding = feeding_processes({pid: a for pid, (_b, a) in pids.items()})
    again = {pid: analyse(pids[pid][0], rules_dir, feeds=why) for pid, why in feeding.items()}
    analysis = again.get(int(bundle.manifest.target.pid), analysis)
    others = [
        (e, (w[0], again.get(int(str(e.get("pid"))), w[1])) if w else None, why)
        for e, w, why in others
    ]
    share_cores(
        [analysis, *(w[1] for _e, w, _why in others if w)],
        frame_rules(rules_dir),
        list(again.values()),
    )
    return Analysed(bundle, analysis, others)


def judge_service(a: Analysed, ruleset: RuleSet) -> Diagnosis:
    """Judge the process and each worker with ``ruleset``; the service's section merges them."""
    d = _judge(a.bundle, a.analysis, ruleset)
    d.workers = [(e, _judge(*w, ruleset) if w else None, why) for e, w, why in a.others]
    d.report["service"] = service_section(
        d.report, [(entry, w.report if w else None, why) for entry, w, why in d.workers]
    )
    return d


def diagnose(bundle_path: Path | Bundle | SafeDir, rules_dirs: Iterable[Path] = ()) -> Diagnosis:
    """Analyse the bundle with its service's other workers, then judge each."""
    extra = list(rules_dirs)
    analysed = analyse_service(bundle_path, extra[-1] if extra else None)
    return judge_service(analysed, load_rules(extra))


def _judge(bundle: Bundle, analysis: Analysis, ruleset: RuleSet) -> Diagnosis:
    from diagnose.render.model import build_report

    partial = {
        n for n, rec in bundle.manifest.collectors.items() if rec.status is CollectorStatus.PARTIAL
    }
    if bundle.manifest.state != "complete":
        partial |= set(bundle.manifest.collectors)
    verdict = judge(ruleset, analysis.metrics, analysis.unmeasured, partial)
    return Diagnosis(bundle, analysis, build_report(bundle, analysis, verdict, ruleset))


def _analyse_workers(bundle: Bundle, rules_dir: Path | None) -> list[WorkerAnalysis]:
    """Each other worker of a service (workers.json, diagnose/app/service.py): its entry, its
    bundle and analysis (None where its bundle cannot be read) and why not."""
    from diagnose.bundle.reader import Bundle as BundleReader

    out: list[WorkerAnalysis] = []
    held = bundle.dir
    if held is None:
        return out
    for entry in worker_entries(bundle):
        if entry.get("status") == "failed":
            out.append((entry, None, str(entry.get("reason") or "its capture failed")))
            continue
        try:
            sub = BundleReader.open(held.sub(f"workers/{int(str(entry.get('pid')))}"))
            out.append((entry, (sub, analyse(sub, rules_dir)), ""))
        except (BadBundle, OSError, ValueError) as exc:
            out.append((entry, None, f"its bundle cannot be read: {exc}"))
    return out


def write_reports(
    bundle_path: Path | Bundle | SafeDir,
    formats: list[str] | None = None,
    out: Path | None = None,
    rules_dirs: Iterable[Path] = (),
    on_verdict: Callable[[Diagnosis, dict[str, Path]], None] | None = None,
) -> tuple[Diagnosis, dict[str, Path]]:
    """Diagnose the bundle and write its reports; bad ``-o`` is refused before the
    analysis. Returns the diagnosis and where each report went (``is_stream``: not a
    file). ``on_verdict`` is called once the verdict is known and report.json is written,
    before the Markdown (its template's import and compilation took 0.2 s of a busy host's
    time to verdict) and the HTML page (the slowest to render): the verdict first."""
    formats = formats or list(formats_of("report"))
    bundle = open_bundle(bundle_path)
    target = open_output(bundle, formats, out, file_names("report"))
    d = diagnose(bundle, rules_dirs)
    render_reports(d.report, target, [f for f in formats if f == "json"])
    if on_verdict is not None:
        on_verdict(d, target.paths())
    render_reports(d.report, target, [f for f in formats if f != "json"])
    if out is None:  # into the bundle: each other worker's reports into its own bundle
        for _entry, wd, _why in d.workers:
            if wd is not None and wd.bundle.dir is not None:
                render_reports(
                    wd.report, open_output(wd.bundle, formats, None, file_names("report")), formats
                )
    return d, target.paths()


def render_reports(report: Report, target: OutputTarget, formats: list[str]) -> None:
    """Write ``report`` (the report dict, as report.json holds it) in ``formats``: every
    renderer reads that dict alone."""
    write_formats("report", report, target, formats)


def report_json(report: Report) -> str:
    """The report as JSON text, as report.json holds it."""
    return json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False, default=str)


def write_report_file(
    path: Path, formats: list[str], out: Path | None = None
) -> tuple[Report, dict[str, Path]]:
    """Render a report.json again, in ``formats``: next to it, or to ``out``."""
    report = load_report(path)
    with open_directory(path.parent, create=False) as held:
        target = open_output(held, formats, out, file_names("report"))
        render_reports(report, target, formats)
        return report, target.paths()
