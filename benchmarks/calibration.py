"""How far diagnose's confidence is from the share of verdicts that were right, on services
it had not seen: every blind batch's first-sight verdicts (samples/blind/bN/first-sight/
verdicts.jsonl) against their labels (sNN/label.toml; dropped services left out).

Prints the reliability table (confidence bins: how many, how many right, the mean
confidence, the share right), the expected calibration error (ECE: the bins' gaps between
mean confidence and share right, weighted by their size), the Brier score, and the isotonic
fit of being right on the confidence (pool adjacent violators: the monotone map from a
confidence to the measured probability). Right: the category; strictly, the category and
the kind the label names (idle has no kind).

  python -m benchmarks calibration [--batches b10,b11,b12,b13] [--strict]
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import dataclass

from benchmarks.common import ROOT
from diagnose.tomlfile import tomllib

BINS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)


@dataclass(frozen=True)
class Verdict:
    batch: str
    sid: str
    confidence: float
    right: bool


def first_sight(batches: list[str] | None, strict: bool) -> list[Verdict]:
    """Every kept service's first-sight verdict, right or not."""
    out = []
    for vf in sorted((ROOT / "samples" / "blind").glob("b*/first-sight/verdicts.jsonl")):
        batch = vf.parent.parent
        if batches and batch.name not in batches:
            continue
        for line in vf.read_text().splitlines():
            r = json.loads(line)
            label_file = batch / r["id"] / "label.toml"
            if not label_file.exists():
                continue
            label = tomllib.loads(label_file.read_text())
            if not str(label.get("verdict", "kept")).startswith("kept"):
                continue
            right = r.get("category") == label["category"]
            if strict and r.get("category") != "idle":
                right = right and r.get("kind") == label["kind"]
            conf = float(r.get("confidence") or 0.0)
            out.append(Verdict(batch.name, r["id"], conf, right))
    return out


def reliability(vs: list[Verdict]) -> list[tuple[float, float, int, int, float]]:
    """(low, high, verdicts, right, mean confidence) per confidence bin."""
    rows = []
    for lo, hi in itertools.pairwise(BINS):
        inside = [v for v in vs if lo <= v.confidence < hi or (hi == 1.0 and v.confidence == 1.0)]
        if inside:
            mean = sum(v.confidence for v in inside) / len(inside)
            rows.append((lo, hi, len(inside), sum(v.right for v in inside), mean))
    return rows


def ece(vs: list[Verdict]) -> float:
    return sum(n / len(vs) * abs(mean - right / n) for _lo, _hi, n, right, mean in reliability(vs))


def brier(vs: list[Verdict]) -> float:
    return sum((v.confidence - float(v.right)) ** 2 for v in vs) / len(vs)


def isotonic(vs: list[Verdict]) -> list[tuple[float, float, float, int]]:
    """Pool adjacent violators: (lowest confidence, highest, P(right), verdicts) per block."""
    blocks: list[list[float]] = []  # right, count, low, high
    for v in sorted(vs, key=lambda v: v.confidence):
        blocks.append([float(v.right), 1.0, v.confidence, v.confidence])
        while len(blocks) > 1 and blocks[-2][0] / blocks[-2][1] >= blocks[-1][0] / blocks[-1][1]:
            last = blocks.pop()
            blocks[-1] = [blocks[-1][0] + last[0], blocks[-1][1] + last[1], blocks[-1][2], last[3]]
    return [(lo, hi, r / n, int(n)) for r, n, lo, hi in blocks]


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks calibration")
    ap.add_argument("--batches", default="", help="comma-separated batch names (default: all)")
    ap.add_argument("--strict", action="store_true", help="right = category and kind")
    args = ap.parse_args(argv)
    vs = first_sight([b for b in args.batches.split(",") if b] or None, args.strict)
    if not vs:
        raise SystemExit("no first-sight verdicts found under samples/blind/")
    batches = sorted({v.batch for v in vs}, key=lambda b: int(b[1:]))
    right = sum(v.right for v in vs)
    print(
        f"{len(vs)} first-sight verdicts of {', '.join(batches)}; right {right} ({right / len(vs):.0%})"
    )
    print(f"ECE {ece(vs):.3f}, Brier {brier(vs):.3f}\n")
    print("| confidence | verdicts | right | mean confidence | share right |")
    print("|---|---|---|---|---|")
    for lo, hi, n, r, mean in reliability(vs):
        print(f"| {lo:.1f}-{hi:.1f} | {n} | {r} | {mean:.2f} | {r / n:.0%} |")
    print("\nisotonic fit (confidence range -> measured share right, verdicts):")
    for lo, hi, p, n in isotonic(vs):
        print(f"  {lo:.2f}-{hi:.2f} -> {p:.2f} ({n})")
