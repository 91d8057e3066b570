"""Accuracy and calibration: every sample captured N times with diagnose's defaults.

For each sample (the zoo, samples/services/*/sample.toml, with its locust load; and the
hand-written samples/*.py, which load themselves, expected verdicts from the table in
samples/README.md), start it, wait for its warm-up, then run ``diagnose attach PID`` with
the default options (``-d`` as given, 10 s) ``--captures`` times one after the other,
against the PID a user would pick (the one the service's command started: the uvicorn or
gunicorn master, the service process). Each capture's verdict (category, kind) and
confidence are compared with the expected ones: right means the category matches and, where
the sample names kinds, the kind is one of them.

Writes docs/accuracy.md (``--out``): per sample the verdicts and confidences, totals and a
calibration table (confidence band -> share right). A hand-written "## Known misses"
section already in that file is kept. The report.json/report.md/manifest.json of every
capture are kept under the results directory (/tmp/diagnose-bench/accuracy-*/) for reading
the misses; with ``--keep-bundles`` the whole bundle too.

``--replay RAW.jsonl`` judges those kept bundles again with the current analysis and rules
(``diagnose report``), without capturing anything: the same captures before and after an
analysis change, so a difference is the change's and not the host's.

  python -m benchmarks accuracy [--captures 5] [--duration 10] [--keep-bundles] [NAMES]
  python -m benchmarks accuracy --replay /tmp/diagnose-bench/accuracy-DATE.jsonl [NAMES]
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import shutil
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.common import (
    DIAGNOSE,
    ROOT,
    SAMPLES,
    Service,
    append_row,
    attach,
    loadavg,
    machine_line,
    results_file,
    run_timed,
    stat,
)
from benchmarks.zoo import ZooSample, all_samples, pick, running, start_load

KEEP = ("report.json", "report.md", "manifest.json")
BANDS = ((0.0, 0.5), (0.5, 0.6), (0.6, 0.7), (0.7, 0.8), (0.8, 0.9), (0.9, 1.01))
MISSES_HEADING = "## Known misses"
BLIND_HEADING = "### On services it had not seen"
ZOO_HEADING = "### On the zoo"


@dataclass(frozen=True)
class Target:
    name: str
    origin: str  # "zoo" or "hand-written"
    stack: str
    category: str
    kinds: tuple[str, ...]
    zoo: ZooSample | None = None
    warmup_s: float = 3.0

    @property
    def expected(self) -> str:
        return f"{self.category}/{'|'.join(self.kinds)}" if self.kinds else self.category

    def right(self, category: str | None, kind: str | None) -> bool:
        return category == self.category and (not self.kinds or kind in self.kinds)


def hand_written() -> list[Target]:
    """The hand-written samples and their expected verdicts, from samples/README.md's first
    table (the sweep's samples, in a later table, need a load generator). A sample whose
    verdict needs an option beyond the defaults ("needs `--false-sharing`") is left out:
    this table measures default captures (benchmarks/false_sharing.py measures those)."""
    out = []
    lines = (SAMPLES / "README.md").read_text().splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("| sample |"))
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    for line in lines[start:end]:
        m = re.match(r"\| `(\w+)\.py` \| (.*?) \| (.*) \|$", line)
        if not m or "needs `--" in m.group(3):
            continue
        pairs = re.findall(r"`(\w+)`(?:, `(\w+)`)?", m.group(3))
        category = pairs[0][0]
        kinds = tuple(dict.fromkeys(k for c, k in pairs if c == category and k))
        out.append(Target(m.group(1), "hand-written", m.group(2), category, kinds))
    return out


def targets(names: list[str]) -> list[Target]:
    zoo = [
        Target(s.name, "zoo", s.stack, s.expected_category, s.expected_kinds, s, s.warmup_s)
        for s in all_samples()
    ]
    return pick(zoo + hand_written(), names)


def verdict_row(rep: dict[str, Any]) -> dict[str, Any]:
    """What a row keeps of a report: the service's verdict where several workers were
    captured (``workers`` then holds each one's), else the process's."""
    v = rep["verdict"]
    service = rep.get("service") or {}
    sv = service.get("verdict") or v
    return dict(
        category=sv.get("primary"),
        kind=sv.get("kind"),
        confidence=sv.get("confidence"),
        workers=[
            (w.get("pid"), w.get("primary"), w.get("kind"), w.get("confidence"), w.get("cpu_cores"))
            for w in service.get("workers") or []
        ],
        ranking=[(r["category"], r.get("kind"), r.get("score")) for r in v.get("ranking", [])],
        followed_from=rep.get("target", {}).get("followed_from"),
        captured_pid=rep.get("target", {}).get("pid"),
        host_foreign_cpu_share=rep.get("metrics", {}).get("host_foreign_cpu_share"),
        host_client_cpu_share=rep.get("metrics", {}).get("host_client_cpu_share"),
        host_neighbour_cpu_share=rep.get("metrics", {}).get("host_neighbour_cpu_share"),
    )


def capture(
    pid: int,
    duration: float,
    out: Path,
    keep: Path,
    keep_bundle: bool = False,
    variant: str = "",
) -> dict[str, Any]:
    extra = shlex.split(variant)
    rc, wall, rep = attach(pid, duration, out, timeout=duration * 4 + 180, extra=extra)
    row: dict[str, Any] = {"rc": rc, "wall_s": round(wall, 1)}
    if variant:
        row["variant"] = variant
    if rep is not None:
        row.update(verdict_row(rep))
    if keep_bundle and out.is_dir():
        shutil.rmtree(keep, ignore_errors=True)
        keep.parent.mkdir(parents=True, exist_ok=True)
        shutil.move(str(out), str(keep))
        row["kept"] = str(keep)
        return row
    keep.mkdir(parents=True, exist_ok=True)
    for name in KEEP:
        if (out / name).exists():
            shutil.copy(out / name, keep / name)
    row["kept"] = str(keep)
    shutil.rmtree(out, ignore_errors=True)
    return row


def run_target(t: Target, args: argparse.Namespace, work: Path, path: Path) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    budget = t.warmup_s + args.captures * (args.duration * 4 + 60) + 60

    def captures(pid: int) -> None:
        time.sleep(t.warmup_s)
        for i in range(args.captures):
            keep = path.parent / path.stem / f"{t.name}-{i}"
            variants = args.variants.split(";") if args.variants else [""]
            variant = variants[i % len(variants)].strip()
            row = capture(pid, args.duration, work / "bundle", keep, args.keep_bundles, variant)
            row = {"sample": t.name, "capture": i, "expected": t.expected, **row}
            row["right"] = t.right(row.get("category"), row.get("kind"))
            row["loadavg"] = loadavg()
            rows.append(row)
            append_row(path, row)
            print(json.dumps(row), file=sys.stderr, flush=True)

    try:
        if t.zoo is not None:
            with running(t.zoo, None, work) as run:
                load = start_load(run, budget, work)
                try:
                    captures(run.pid)
                finally:
                    load.stop()
        else:
            with Service(t.name, [], work / "ends.txt", seconds=budget) as svc:
                captures(svc.pid)
                svc.stop()
    except RuntimeError as exc:  # the service did not start
        row = {"sample": t.name, "expected": t.expected, "error": str(exc)[:500], "right": False}
        rows.append(row)
        append_row(path, row)
    return rows


def _cell(r: dict[str, Any]) -> str:
    if "error" in r:
        return "did not start"
    if r.get("category") is None:
        return f"no report (exit {r.get('rc')})"
    conf = r.get("confidence")
    c = f" {conf:.2f}" if isinstance(conf, int | float) else ""
    mark = ""
    if not r["right"]:
        ranks = [i for i, (cat, _, _) in enumerate(r.get("ranking", []), 1) if cat == r["want"]]
        mark = f" ✗ (expected ranked {ranks[0]})" if ranks else " ✗ (expected not ranked)"
    return f"{r['category']}/{r.get('kind') or '-'}{c}{mark}"


def document(
    rows: list[dict[str, Any]], ts: list[Target], args: argparse.Namespace, raw: Path
) -> str:
    names = " ".join(args.names)
    cmd = f"python -m benchmarks accuracy --captures {args.captures} --duration {args.duration:g}"
    lines = [
        "# Accuracy and calibration",
        "",
        "Every sample, started with its load and captured with `diagnose attach PID` at the",
        "default options, several times in a row; the verdict (category/kind) and confidence",
        "of each capture against the expected verdict (samples/README.md; the zoo's come from",
        "each `samples/services/NAME/sample.toml`, verified by its counterfactual). Right: the",
        "category matches and, where the sample names kinds, the kind is one of them. ✗ marks",
        "a wrong verdict. Generated by:",
        "",
        "```bash",
        f"{cmd}{' ' + names if names else ''}",
        "```",
        "",
        f"Machine: {machine_line()}. Written {time.strftime('%Y-%m-%d %H:%M')} from the raw",
        f"rows `{raw.name}` (each row has the load average at its capture).",
        "",
        "Host busy: the share of the host's CPU that neither the target nor diagnose used during",
        "the captures (`host_foreign_cpu_share`, median): other work on the same cores. Of it,",
        "load: what the sample's own load generator used (locust, a process of its own; the",
        "hand-written samples load themselves in-process), which diagnose recognises as the target's client",
        "(`host_client_cpu_share`) and reports as advice (scheduling/load_on_host), never as",
        "the verdict; the rest, neighbours (`host_neighbour_cpu_share`), it reports first",
        "(scheduling/cpu_contention) when the target's threads wait for a core longer than they",
        "run. On a shared host, read the table with those columns (- where not measured).",
        "",
        "| sample | origin | expected | verdicts (category/kind confidence) | host busy "
        "| load | neighbours | right (category) | right |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    want = {t.name: t.category for t in ts}
    for r in rows:
        r["want"] = want.get(r["sample"])
        r["category_right"] = r.get("category") == r["want"]

    def score(sel: list[dict[str, Any]]) -> str:
        n, c = sum(1 for r in sel if r["right"]), sum(1 for r in sel if r["category_right"])
        return f"{c}/{len(sel)} | {n}/{len(sel)}"

    for t in ts:
        sel = [r for r in rows if r["sample"] == t.name]
        cells = "; ".join(_cell(r) for r in sel)
        shares = []
        for key in ("host_foreign_cpu_share", "host_client_cpu_share", "host_neighbour_cpu_share"):
            st = stat([r.get(key) for r in sel])
            shares.append(f"{st.median:.2f}" if st.n else "-")
        lines.append(
            f"| {t.name} | {t.origin} | {t.expected} | {cells} | {' | '.join(shares)} "
            f"| {score(sel)} |"
        )
    for origin in ("zoo", "hand-written"):
        names = {t.name for t in ts if t.origin == origin}
        sel = [r for r in rows if r["sample"] in names]
        if sel:
            lines.append(f"| **{origin} total** | | | | | | | {score(sel)} |")
    lines.append(f"| **all** | | | | | | | {score(rows)} |")
    lines += [
        "",
        "## Calibration",
        "",
        ZOO_HEADING,
        "",
        "Share of verdicts that were right, by the confidence diagnose gave them:",
        "",
        "| confidence | verdicts | right | share right |",
        "|---|---|---|---|",
    ]
    for lo, hi in BANDS:
        sel = [r for r in rows if isinstance(r.get("confidence"), int | float)]
        sel = [r for r in sel if lo <= r["confidence"] < hi]
        n = sum(1 for r in sel if r["right"])
        share = f"{n / len(sel):.0%}" if sel else "-"
        band = f"{lo:.1f}-{min(hi, 1.0):.1f}"
        lines.append(f"| {band} | {len(sel)} | {n} | {share} |")
    return "\n".join(lines) + "\n"


def write(doc: str, out: Path) -> None:
    """Write the generated part; keep the hand-written sections: Known misses, and the blind
    batches' calibration (``python -m benchmarks calibration``'s) before the zoo's."""
    kept = ""
    if out.exists():
        text = out.read_text()
        at = text.find(MISSES_HEADING)
        if at >= 0:
            kept = "\n" + text[at:]
        blind, zoo = text.find(BLIND_HEADING), text.find(ZOO_HEADING)
        if 0 <= blind < zoo:
            doc = doc.replace(ZOO_HEADING, text[blind:zoo] + ZOO_HEADING, 1)
    out.write_text(doc + kept)


def replay(raw: Path, names: list[str], path: Path) -> list[dict[str, Any]]:
    """Judge the bundles kept by an earlier run (``--keep-bundles``) again: ``diagnose
    report`` with this checkout's analysis and rules; rows as a capture's, the capture
    figures (load average, exit code) kept from the original row."""
    rows = []
    for old in (json.loads(line) for line in raw.read_text().splitlines() if line.strip()):
        kept = Path(old.get("kept") or "")
        if (names and old["sample"] not in names) or not (kept / "manifest.json").exists():
            continue
        argv = [*DIAGNOSE, "report", str(kept), "--format", "json", "-q"]
        rc, wall, _, _ = run_timed(argv, timeout=600)
        row = {k: old.get(k) for k in ("sample", "capture", "expected", "loadavg", "kept")}
        row.update(rc=rc, report_wall_s=round(wall, 1), replay_of=raw.name)
        report = kept / "report.json"
        if rc == 0 and report.exists():
            row.update(verdict_row(json.loads(report.read_text())))
        rows.append(row)
        append_row(path, row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    return rows


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks accuracy", description=__doc__)
    p.add_argument("names", nargs="*", help="samples (default: the zoo and the hand-written)")
    p.add_argument("--captures", type=int, default=5)
    p.add_argument("--duration", type=float, default=10.0, help="seconds per capture (-d)")
    p.add_argument("--out", type=Path, default=ROOT / "docs" / "accuracy.md")
    p.add_argument("--summarise", type=Path, help="write the document from a raw-rows file")
    p.add_argument("--keep-bundles", action="store_true", help="keep every capture's whole bundle")
    p.add_argument("--replay", type=Path, help="judge the bundles a --keep-bundles run kept, again")
    p.add_argument(
        "--variants",
        default="",
        help="';'-separated attach options the captures of each sample take in turn, side by "
        "side on the same running service (e.g. ';--cpu-budget 0'; an empty one: the defaults)",
    )
    args = p.parse_args(argv)
    ts = targets(args.names)
    if args.replay or args.summarise:
        if args.replay:
            path = results_file("accuracy-replay")
            rows = replay(args.replay, args.names, path)
        else:
            path = args.summarise
            rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        ts = [t for t in ts if t.name in {r["sample"] for r in rows}]
        rows = [r for r in rows if any(t.name == r["sample"] for t in ts)]
        for r in rows:  # replayed rows are judged against the current expectations
            want = next(t for t in ts if t.name == r["sample"])
            r["right"] = want.right(r.get("category"), r.get("kind"))
    else:
        path = results_file("accuracy")
        print(f"# machine: {machine_line()}", file=sys.stderr)
        print(f"# raw rows: {path}", file=sys.stderr)
        rows = []
        work = path.parent / f"{path.stem}-work"
        for t in ts:
            rows += run_target(t, args, work, path)
        shutil.rmtree(work, ignore_errors=True)
    doc = document(rows, ts, args, path)
    write(doc, args.out)
    print(doc)


if __name__ == "__main__":
    main()
