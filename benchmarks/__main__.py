"""The benchmarks' one entry point: ``python -m benchmarks COMMAND [OPTIONS]``.

Run as root from the repository root, alone on the host (one benchmark at a time). Each
command prints the machine, the load average, raw rows (JSON lines, also kept under
/tmp/diagnose-bench/) and a Markdown table; docs/performance.md quotes them.

  machine           the host the figures come from (CPU, cores, kernel, tools, load)
  overhead          the target's throughput alone, under diagnose attach, py-spy, each collector
  analysis          diagnose report's time and peak RSS on bundles of growing size
  scale-bundle      make a bigger bundle from a recorded one (in time and in threads)
  verdict           the shortest capture whose verdict matches a 60 s capture's; bundle size
  short-capture     diagnose attach -d 4: time to verdict, when the window opened, perf's
                    samples; several diagnose trees side by side (before/after a change)
  tool-cost         diagnose's own CPU by part (threads, helpers) and its samplers' unit
                    costs, at full rates and within the default CPU budget
  oncpu-stability   on-CPU category shares across repeated short captures
  perf-overhead     tests/targets/perf_overhead.py: perf's own recordings, alternating
  false-sharing     the false-sharing samples' throughput per layout; diagnose's findings on
                    them over repeated captures
  sweep             diagnose sweep on the sweep samples: the knee, and the recommendation vs the default
  counterfactual    the sample zoo: each sample's one-bottleneck fix against the service as is
  accuracy          every sample, captured N times with diagnose's defaults: verdicts vs expected
  watch-cost        diagnose watch's own CPU per cycle, projected to its default duty cycle
  watch-memory      diagnose watch's memory capture by capture: anonymous, Python objects
  sensitivity       every rule threshold moved by +-30%: which labelled captures turn wrong
  calibration       confidence against the share right, on the blind batches' first sight
"""

from __future__ import annotations

import runpy
import sys
from collections.abc import Callable

from benchmarks.common import ROOT, machine


def _machine(argv: list[str]) -> None:
    for k, v in machine().items():
        print(f"{k}: {v}")


def _module(name: str) -> Callable[[list[str]], None]:
    def run(argv: list[str]) -> None:
        import importlib

        importlib.import_module(f"benchmarks.{name}").main(argv)

    return run


def _script(name: str) -> Callable[[list[str]], None]:
    """The older stand-alone scripts take their options from sys.argv."""

    def run(argv: list[str]) -> None:
        path = ROOT / name
        sys.argv = [str(path), *argv]
        runpy.run_path(str(path), run_name="__main__")

    return run


COMMANDS: dict[str, Callable[[list[str]], None]] = {
    "machine": _machine,
    "overhead": _module("overhead"),
    "analysis": _module("analysis"),
    "scale-bundle": _module("scale_bundle"),
    "verdict": _module("verdict"),
    "short-capture": _module("short_capture"),
    "tool-cost": _module("tool_cost"),
    "oncpu-stability": _script("benchmarks/oncpu_stability.py"),
    "perf-overhead": _script("tests/targets/perf_overhead.py"),
    "false-sharing": _module("false_sharing"),
    "sweep": _module("sweep"),
    "counterfactual": _module("counterfactual"),
    "accuracy": _module("accuracy"),
    "watch-cost": _module("watch_cost"),
    "watch-memory": _module("watch_memory"),
    "sensitivity": _module("sensitivity"),
    "calibration": _module("calibration"),
}


def main() -> None:
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help") or sys.argv[1] not in COMMANDS:
        print(__doc__)
        sys.exit(0 if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help") else 2)
    COMMANDS[sys.argv[1]](sys.argv[2:])


main()
