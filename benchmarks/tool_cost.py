"""What diagnose itself costs the host during a capture, process by process.

Starts a sample service in its own session, runs ``diagnose attach`` on it, and samples
the CPU time of diagnose and each of its helpers (py-spy, perf) with psutil while the
capture runs; prints each one's CPU use in cores, and the bundle's own measure of the
same (``tool_cpu_cores``, from the proc sampler). Usage (as root, repository root):

    python benchmarks/tool_cost.py --sample lock_contention --seconds 8
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parent.parent


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", default="lock_contention")
    p.add_argument("--seconds", type=float, default=8.0)
    args = p.parse_args()
    sample = subprocess.Popen(
        [sys.executable, f"{args.sample}.py", "--seconds", str(args.seconds + 30)],
        cwd=ROOT / "samples",
        stdout=subprocess.DEVNULL,
        start_new_session=True,
    )
    first: dict[tuple[int, str], tuple[float, float]] = {}
    last: dict[tuple[int, str], tuple[float, float]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            time.sleep(1.5)
            out = Path(tmp) / "bundle"
            cmd = [sys.executable, "-m", "diagnose", "attach", str(sample.pid), "-d",
                   str(args.seconds), "-o", str(out), "--format", "json"]  # fmt: skip
            tool = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
            me = psutil.Process(tool.pid)
            while tool.poll() is None:
                try:
                    helpers = me.children(recursive=True)
                except psutil.Error:
                    break
                if helpers:  # the capture is running: its helpers are up
                    for proc in [me, *helpers]:
                        try:
                            t = proc.cpu_times()
                            key = (proc.pid, " ".join(proc.cmdline()[1:4]))
                        except psutil.Error:
                            continue
                        now = (time.monotonic(), t.user + t.system)
                        first.setdefault(key, now)
                        last[key] = now
                time.sleep(0.25)
            report = json.loads((out / "report.json").read_text())
        finally:
            sample.kill()
            sample.wait()
    total = 0.0
    for key, (t1, c1) in last.items():
        t0, c0 = first[key]
        if t1 > t0:
            cores = (c1 - c0) / (t1 - t0)
            total += cores
            print(f"{cores:6.3f} cores  pid {key[0]}  {key[1][:70]}")
    m = report["metrics"]
    print(f"{total:6.3f} cores in all (psutil, while the helpers ran)")
    print(
        f"bundle: tool_cpu_cores={m['tool_cpu_cores']} tool_cpu_share={m['tool_cpu_share']} "
        f"of {m['cores_available']} cores; target threads {m['threads_total']}"
    )


if __name__ == "__main__":
    main()
