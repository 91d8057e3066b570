"""The pipeline after capture: bundle -> analysis -> verdict -> report files.

``diagnose report`` and ``diagnose attach`` both call :func:`write_reports`; it reads the
bundle alone, so editing rules and re-running ``diagnose report`` recomputes everything.

Reports are written through a directory descriptor opened once (:func:`open_output`): the
bundle's own, held since the bundle was opened, or the ``-o`` directory's; never by
walking a path again, which the bundle's owner could have swapped for a link meanwhile.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from diagnose.analyse import analyse
from diagnose.app.service import service_section, worker_entries
from diagnose.bundle.manifest import CollectorStatus
from diagnose.bundle.safedir import SafeDir, read_regular, write_all
from diagnose.bundle.schema import parse_json
from diagnose.bundle.writer import dump_json, output_error
from diagnose.errors import BadBundle, OutputError, UsageError
from diagnose.render.schema import REPORT, REPORT_SCHEMA, Report
from diagnose.verdict import judge, load_rules
from diagnose.verdict.ruleset import RuleSet

if TYPE_CHECKING:
    # both need pandas: imported where a bundle is read, so that the CLI starts a capture
    # without them (tests/unit/test_cli_start.py)
    from diagnose.analyse.model import Analysis
    from diagnose.bundle.reader import Bundle

FORMATS = ("html", "md", "json")
FILENAMES = {"html": "report.html", "md": "report.md", "json": "report.json"}


@dataclass
class Diagnosis:
    bundle: Bundle
    analysis: Analysis
    report: Report
    #: a service's other workers (diagnose/app/service.py): each one's entry in workers.json,
    #: its diagnosis (None where it cannot be judged) and why not
    workers: list[tuple[dict[str, Any], Diagnosis | None, str]] = field(default_factory=list)


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


def open_bundle(bundle_path: Path | Bundle | SafeDir) -> Bundle:
    from diagnose.bundle.reader import Bundle

    return bundle_path if isinstance(bundle_path, Bundle) else Bundle.open(bundle_path)


def diagnose(bundle_path: Path | Bundle | SafeDir, rules_dirs: Iterable[Path] = ()) -> Diagnosis:
    """Analyse the bundle and the bundles of its service's other workers, count their
    threads together against the cores they share (analyse/service.py), then judge each."""
    from diagnose.analyse.frames import frame_rules
    from diagnose.analyse.service import share_cores

    bundle = open_bundle(bundle_path)
    extra = list(rules_dirs)
    rules_dir = extra[-1] if extra else None
    analysis = analyse(bundle, rules_dir)
    others = _analyse_workers(bundle, rules_dir)
    share_cores([analysis, *(w[1] for _e, w, _why in others if w)], frame_rules(rules_dir))
    ruleset = load_rules(extra)
    d = _judge(bundle, analysis, ruleset)
    d.workers = [(e, _judge(*w, ruleset) if w else None, why) for e, w, why in others]
    d.report["service"] = service_section(
        d.report, [(entry, w.report if w else None, why) for entry, w, why in d.workers]
    )
    return d


def _judge(bundle: Bundle, analysis: Analysis, ruleset: RuleSet) -> Diagnosis:
    from diagnose.render.model import build_report

    partial = {
        n for n, rec in bundle.manifest.collectors.items() if rec.status is CollectorStatus.PARTIAL
    }
    if bundle.manifest.state != "complete":
        partial |= set(bundle.manifest.collectors)
    verdict = judge(ruleset, analysis.metrics, analysis.unmeasured, partial)
    return Diagnosis(bundle, analysis, build_report(bundle, analysis, verdict, ruleset))


Analysed = tuple[dict[str, Any], "tuple[Bundle, Analysis] | None", str]


def _analyse_workers(bundle: Bundle, rules_dir: Path | None) -> list[Analysed]:
    """Each other worker of a service (workers.json, diagnose/app/service.py): its entry, its
    bundle and analysis (None where its bundle cannot be read) and why not."""
    from diagnose.bundle.reader import Bundle as BundleReader

    out: list[Analysed] = []
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


@dataclass
class OutputTarget:
    """Where reports go: a directory held open and the file name of each format in it, or
    (``stream``) stdout or a stream such as /dev/stdout for the one format asked for."""

    dir: SafeDir | None
    names: dict[str, str]
    stream: Path | None = None

    def path(self, fmt: str) -> Path:
        """For people: the path of the ``fmt`` file (``-`` for stdout)."""
        if self.stream is not None:
            return self.stream
        assert self.dir is not None
        return self.dir.display / self.names[fmt]

    def paths(self) -> dict[str, Path]:
        return {f: self.path(f) for f in self.names}

    def write(self, fmt: str, data: str | bytes) -> Path:
        """Write the ``fmt`` file (0600) so that it is either old or complete; or the
        stream."""
        raw = data.encode("utf-8") if isinstance(data, str) else data
        if self.stream is not None:
            _write_stream(self.stream, raw)
            return self.stream
        assert self.dir is not None
        try:
            self.dir.write_atomic(self.names[fmt], lambda fd: write_all(fd, raw))
        except OSError as exc:
            raise output_error(self.path(fmt), exc) from exc
        return self.path(fmt)


def _write_stream(path: Path, raw: bytes) -> None:
    if path == STDOUT:
        sys.stdout.flush()
        sys.stdout.buffer.write(raw)
        sys.stdout.buffer.flush()
        return
    try:
        with path.open("wb") as fh:
            fh.write(raw)
    except OSError as exc:
        raise OutputError(f"cannot write {path}: {exc.strerror or exc}") from exc


def open_directory(path: Path, create: bool) -> SafeDir:
    try:
        if create and not path.is_dir():
            path.mkdir(mode=0o700, parents=True, exist_ok=True)
        return SafeDir.open(path)
    except OSError as exc:
        raise OutputError(f"cannot write to {path}: {exc.strerror or exc}") from exc


def open_output(
    source: Bundle | SafeDir,
    formats: list[str],
    out: Path | None,
    filenames: Mapping[str, str] = FILENAMES,
) -> OutputTarget:
    """Open where the reports go, once: the source's directory (a bundle's descriptor, held
    since the bundle was opened, or a sweep directory's) unless ``out`` is given: with one
    format, ``-`` (stdout), a stream such as /dev/stdout, or a file (a name ending .html,
    .md or .json); else a directory (created if missing)."""
    if out is None:
        held = source if isinstance(source, SafeDir) else source.dir
        assert held is not None
        return OutputTarget(held, {f: filenames[f] for f in formats})
    several = len(formats) > 1
    if is_stream(out):
        if several:
            raise UsageError(
                f"-o {out} takes one report, not {len(formats)}: choose one with "
                "--format html, md or json"
            )
        return OutputTarget(None, {formats[0]: str(out)}, stream=out)
    suffixes = {".html": "html", ".htm": "html", ".md": "md", ".json": "json"}
    if not several and out.suffix.lower() in suffixes:
        return OutputTarget(open_directory(out.parent, create=True), {formats[0]: out.name})
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o {out} is a file; with several formats give a directory")
    return OutputTarget(open_directory(out, create=True), {f: filenames[f] for f in formats})


def write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (0600) so that ``path`` is either old or complete (its
    directory is opened once, then the file is written through it)."""
    with open_directory(path.parent, create=True) as d:
        OutputTarget(d, {"file": path.name}).write("file", text)


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
    formats = formats or list(FORMATS)
    bundle = open_bundle(bundle_path)
    target = open_output(bundle, formats, out)
    d = diagnose(bundle, rules_dirs)
    render_reports(d.report, target, [f for f in formats if f == "json"])
    if on_verdict is not None:
        on_verdict(d, target.paths())
    render_reports(d.report, target, [f for f in formats if f != "json"])
    if out is None:  # into the bundle: each other worker's reports into its own bundle
        for _entry, wd, _why in d.workers:
            if wd is not None and wd.bundle.dir is not None:
                render_reports(wd.report, open_output(wd.bundle, formats, None), formats)
    return d, target.paths()


def render_reports(report: Report, target: OutputTarget, formats: list[str]) -> None:
    """Write ``report`` (the report dict, as report.json holds it) in ``formats``: every
    renderer reads that dict alone."""
    # the small reports first: on a disk that fills up, they are the ones that fit
    for fmt in sorted(formats, key=lambda f: f == "html"):
        if fmt == "json":
            target.write(fmt, dump_json(report))
        elif fmt == "md":
            from diagnose.render.markdown import render_markdown

            target.write(fmt, render_markdown(report))
        elif fmt == "html":
            from diagnose.render.charts import chart_data
            from diagnose.render.html import render_html

            target.write(fmt, render_html(report, chart_data(report)))


def report_json(report: Report) -> str:
    """The report as JSON text, as report.json holds it."""
    return json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False, default=str)


# --- a report.json read back ------------------------------------------------------------

#: what a report must hold to be rendered or compared again
REPORT_SECTIONS = (
    "bundle", "target", "capture", "verdict", "findings", "metrics", "unmeasured",
    "collectors", "not_measured", "series", "stacks",
)  # fmt: skip


def is_report_file(path: Path) -> bool:
    """``path`` names a report (a JSON file), not a bundle (a directory)."""
    return path.suffix.lower() == ".json" and not path.is_dir()


#: a report.json with its stacks and series is a few MiB
MAX_REPORT_BYTES = 256 * 1024 * 1024


def load_report(path: Path) -> Report:
    """A report.json that diagnose wrote, read back: what ``diagnose report`` re-renders
    and ``diagnose compare`` compares. :class:`BadBundle` (exit 7) for anything else."""
    try:
        data, _ = read_regular(path, MAX_REPORT_BYTES)
    except OSError as exc:
        raise BadBundle(f"cannot read {path}: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise BadBundle(f"{path}: {exc}") from None
    return parse_report(data, path)


def parse_report(data: bytes, path: Path) -> Report:
    """``data`` checked to be a report.json diagnose wrote (``path`` names it in messages)."""
    try:
        doc = parse_json(data, path.name)
    except BadBundle as exc:
        raise BadBundle(f"{path} is not a report.json: not JSON ({exc})") from None
    if not isinstance(doc, dict) or doc.get("schema") != REPORT_SCHEMA:
        found = doc.get("schema") if isinstance(doc, dict) else None
        raise BadBundle(
            f"{path} is not a diagnose report ({REPORT_SCHEMA}): its schema is {found!r}"
        )
    missing = [k for k in REPORT_SECTIONS if not isinstance(doc.get(k), (dict, list))]
    if missing:
        raise BadBundle(
            f"{path} lacks {', '.join(missing)} (written by diagnose "
            f"{doc.get('tool_version', '?')}?): run diagnose report on its bundle"
        )
    try:  # the type of every field a renderer reads
        REPORT.check(doc, "")
    except BadBundle as exc:
        raise BadBundle(f"{path} is not a usable report: {exc}") from None
    return cast(Report, doc)


def write_report_file(
    path: Path, formats: list[str], out: Path | None = None
) -> tuple[Report, dict[str, Path]]:
    """Render a report.json again, in ``formats``: next to it, or to ``out``."""
    report = load_report(path)
    with open_directory(path.parent, create=False) as held:
        target = open_output(held, formats, out)
        render_reports(report, target, formats)
        return report, target.paths()
