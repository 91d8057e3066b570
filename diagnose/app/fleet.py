"""``diagnose fleet INPUT...``: many pods' verdicts side by side, and the pods that differ.

Each input is one pod: a watch store (its latest capture), a bundle (judged now, with the
rules given) or a report.json. The fleet model (a plain dict, ``--json``) holds the
verdict distribution and one row per pod; a pod is odd when its verdict is not the one
most pods share, or when one of its key metrics lies more than ``threshold`` robust
deviations from the fleet's median: ``(x - median) / (1.4826 x MAD)``, the MAD scaled to
a normal distribution's standard deviation, so one outlier cannot hide itself by widening
the spread as it widens a standard deviation. docs/watch.md, "Fleet".
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from diagnose import __version__
from diagnose.app.output import open_output
from diagnose.app.report import diagnose
from diagnose.app.reporters import file_names, write_formats
from diagnose.bundle.safedir import SafeDir
from diagnose.errors import BadBundle
from diagnose.render.schema import Report, is_report_file, load_report
from diagnose.watch.store import Store, is_store

FLEET_SCHEMA = "diagnose.fleet/1"
#: the modified z-score cut-off of Iglewicz and Hoaglin
DEFAULT_THRESHOLD = 3.5
MAD_TO_SD = 1.4826
#: metrics compared across pods
FLEET_METRICS = (
    "busy_share_running",
    "busy_share_runnable",
    "busy_share_lock",
    "busy_share_gil",
    "busy_share_io",
    "idle_share",
    "runq_delay_p99_ms",
    "ctx_switches_involuntary_per_s",
    "migrations_per_s",
    "process_cpu_cores",
)
#: the smallest spread per unit: identical pods (MAD 0) must not make noise an outlier
_FLOORS = (("share", 0.02), ("_ms", 0.5), ("_per_s", 10.0), ("_cores", 0.05))
#: fewer pods than this measured a metric: it is not compared
MIN_PODS = 3


@dataclass(frozen=True)
class Pod:
    name: str
    source: str  # the input as given
    input_kind: str  # store | bundle | report
    report: Report | Mapping[str, Any]


def load_pod(path: Path, rules_dirs: Sequence[Path] = ()) -> Pod:
    """One input: a store's latest capture, a bundle judged now, or a report.json."""
    if is_store(path):
        with Store.open(path) as store:
            row = store.latest()
            if row is None:
                raise BadBundle(f"the store {path} holds no capture yet")
            return Pod(path.name, str(path), "store", store.report(row))
    if is_report_file(path):
        name = path.parent.name if path.name == "report.json" else path.stem
        return Pod(name or str(path), str(path), "report", load_report(path))
    if path.is_dir():
        return Pod(path.name or str(path), str(path), "bundle", diagnose(path, rules_dirs).report)
    raise BadBundle(f"{path} is neither a watch store, a bundle nor a report.json")


def load_pods(paths: Iterable[Path], rules_dirs: Sequence[Path] = ()) -> list[Pod]:
    pods = [load_pod(p, rules_dirs) for p in paths]
    names = Counter(p.name for p in pods)
    # two inputs of one name (two pods' report.json in folders named alike): their paths
    return [Pod(p.source, p.source, p.input_kind, p.report) if names[p.name] > 1 else p
            for p in pods]  # fmt: skip


def _floor(metric: str) -> float:
    return next((f for suffix, f in _FLOORS if suffix in metric), 1e-9)


def deviations(values: Mapping[str, float], metric: str) -> dict[str, dict[str, float]]:
    """Per pod: its value, the fleet's median and MAD, and its robust deviation."""
    if len(values) < MIN_PODS:
        return {}
    xs = list(values.values())
    med = statistics.median(xs)
    mad = statistics.median(abs(x - med) for x in xs)
    scale = max(MAD_TO_SD * mad, 0.05 * abs(med), _floor(metric))
    return {
        pod: {"value": x, "median": med, "mad": mad, "deviations": round((x - med) / scale, 2)}
        for pod, x in values.items()
    }


def _verdict(report: Mapping[str, Any]) -> tuple[str, str | None]:
    v = report["verdict"]
    return str(v.get("primary") or "unknown"), v.get("kind")


def _label(v: tuple[str, str | None]) -> str:
    return f"{v[0]}/{v[1]}" if v[1] else v[0]


def _metric_values(pods: Sequence[Pod]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for m in FLEET_METRICS:
        for p in pods:
            x = p.report["metrics"].get(m)
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                out.setdefault(m, {})[p.name] = float(x)
    return out


def fleet(pods: Sequence[Pod], threshold: float = DEFAULT_THRESHOLD) -> dict[str, Any]:
    """The fleet model: distribution, majority verdict, one row per pod with why it is odd."""
    counts = Counter(_verdict(p.report) for p in pods)
    top, top_n = counts.most_common(1)[0] if counts else (("unknown", None), 0)
    majority = top if top_n * 2 > len(pods) else None
    devs = {m: deviations(vals, m) for m, vals in _metric_values(pods).items()}
    rows = [_pod_row(p, majority, top_n, len(pods), devs, threshold) for p in pods]
    odd = [r for r in rows if r["odd"]]
    return {
        "schema": FLEET_SCHEMA,
        "tool_version": __version__,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "threshold": threshold,
        "headline": _headline(len(pods), counts, majority, odd),
        "majority": None
        if majority is None
        else {"category": majority[0], "kind": majority[1], "pods": top_n},
        "distribution": [
            {"category": c, "kind": k, "count": n} for (c, k), n in counts.most_common()
        ],
        "metrics": {
            m: {
                "median": next(iter(d.values()))["median"] if d else None,
                "mad": next(iter(d.values()))["mad"] if d else None,
            }
            for m, d in devs.items()
        },
        "pods": rows,
        "odd": [r["name"] for r in odd],
    }


def _pod_row(
    p: Pod,
    majority: tuple[str, str | None] | None,
    top_n: int,
    n: int,
    devs: Mapping[str, Mapping[str, Mapping[str, float]]],
    threshold: float,
) -> dict[str, Any]:
    r, (cat, kind) = p.report, _verdict(p.report)
    why: list[str] = []
    if majority is not None and (cat, kind) != majority:
        why.append(f"verdict {_label((cat, kind))}; {top_n} of {n} pods: {_label(majority)}")
    outliers = []
    for m, per_pod in devs.items():
        d = per_pod.get(p.name)
        if d is not None and abs(d["deviations"]) > threshold:
            outliers.append({"metric": m, **d})
            why.append(
                f"{m} {d['value']:.3g} vs median {d['median']:.3g} "
                f"({d['deviations']:+.1f} robust deviations)"
            )
    return {
        "name": p.name,
        "source": p.source,
        "input": p.input_kind,
        "pid": r["target"].get("pid"),
        "comm": r["target"].get("comm"),
        "started": r["capture"].get("started"),
        "category": cat,
        "kind": kind,
        "confidence": r["verdict"].get("confidence"),
        "headline": r["verdict"].get("headline") or "",
        "metrics": {m: r["metrics"].get(m) for m in FLEET_METRICS},
        "outliers": outliers,
        "odd": bool(why),
        "why": why,
    }


def _headline(
    n: int, counts: Counter[tuple[str, str | None]], majority: Any, odd: list[dict[str, Any]]
) -> str:
    dist = ", ".join(f"{c} {_label(v)}" for v, c in counts.most_common())
    text = f"{n} pods: {dist}."
    if majority is None and n > 1:
        text += " No verdict is held by most pods."
    if odd:
        text += (
            " Differ from the rest: " + "; ".join(f"{r['name']} ({r['why'][0]})" for r in odd) + "."
        )
    else:
        text += " No pod differs from the rest."
    return text


def write_fleet(model: Mapping[str, Any], fmts: list[str], out: Path) -> dict[str, Path]:
    """Write the fleet model in ``fmts`` to ``out`` (a directory, a file for one format, or
    a stream), relative to the current directory; where each went."""
    with SafeDir.open(".") as here:
        target = open_output(here, fmts, out, file_names("fleet"))
        write_formats("fleet", model, target, fmts)
        return target.paths()
