"""How stable are on-CPU category shares from a short capture without perf?

Captures a sample service N times for D seconds (py-spy and /proc only) and reports, per
capture, the share of on-CPU time in one category computed two ways:

- ``ticks``: the Python stack seen at each /proc tick (20 Hz), weighted by the thread's
  on-CPU time in that tick interval (what diagnose did before);
- ``py-spy``: every py-spy interval (100 Hz samples) weighted by its thread's on-CPU time
  interpolated between ticks (what diagnose does now);

then the mean, the standard deviation across captures, and the number of samples each
share rests on. Usage (as root, from the repository root):

    python benchmarks/oncpu_stability.py --sample preprocess_tokenize --category preprocess \
        --runs 5 --seconds 4
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from diagnose.analyse import analyse
from diagnose.analyse.frames import frame_rules
from diagnose.analyse.load import load
from diagnose.analyse.threads import thread_time
from diagnose.bundle import Bundle
from diagnose.collect.base import CaptureOptions
from diagnose.collect.session import capture

ROOT = Path(__file__).resolve().parent.parent


def tick_share(bundle: Bundle, category: str) -> tuple[float, int]:
    """The share from the stack at each /proc tick (the 20 Hz method), and its sample count."""
    data = load(bundle)
    frames = frame_rules()
    tt = thread_time(data, frames)
    assert tt is not None
    run = tt.intervals[(tt.intervals["running"] > 0) & (tt.intervals["stack_id"] >= 0)]
    total = hit = 0.0
    for sid, w in zip(run["stack_id"], run["running"], strict=True):
        total += w
        if frames.categorize(data.py_stacks.get(int(sid), ())) == category:
            hit += w
    return (hit / total if total else 0.0), len(run)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", default="preprocess_tokenize")
    p.add_argument("--category", default="preprocess")
    p.add_argument("--runs", type=int, default=5)
    p.add_argument("--seconds", type=float, default=4.0)
    args = p.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.runs):
            proc = subprocess.Popen(
                [sys.executable, f"{args.sample}.py", "--seconds", str(args.seconds + 30)],
                cwd=ROOT / "samples",
                stdout=subprocess.DEVNULL,
                start_new_session=True,
            )
            try:
                time.sleep(1.5)
                out = Path(tmp) / f"b{i}"
                capture(
                    proc.pid,
                    out,
                    CaptureOptions(duration=args.seconds, collectors=("proc", "pyspy")),
                    follow_children=False,
                )
            finally:
                proc.kill()
                proc.wait()
            bundle = Bundle.open(out)
            m = analyse(bundle).metrics
            old, old_n = tick_share(bundle, args.category)
            new, new_n = m[f"oncpu_share_{args.category}"], m["oncpu_samples"]
            rows.append((old, old_n, new, new_n))
            print(f"run {i}: ticks {old:.3f} ({old_n} samples)  py-spy {new:.3f} ({new_n} samples)")
    for name, col, n in (("ticks", 0, 1), ("py-spy", 2, 3)):
        vals = [r[col] for r in rows]
        sd = statistics.stdev(vals) if len(vals) > 1 else 0.0
        mean_n = statistics.mean(r[n] for r in rows)
        print(
            f"{name:7s} share of {args.category}: mean {statistics.mean(vals):.3f}, "
            f"sd {sd:.3f} across {len(vals)} captures of {args.seconds:g} s, "
            f"{mean_n:.0f} samples each"
        )


if __name__ == "__main__":
    main()
