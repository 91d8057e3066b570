"""Native per-worker counters side by side: false sharing (and its fix, true sharing, a control).

Compiles ``false_sharing_counters.c`` (gcc, cached) and replaces this process with it, so
the PID you started is the native service. Worker threads count items and bytes in a
statistics slot each; by default the slots are adjacent, several in one 64-byte cache line:

    python false_sharing_native.py              # adjacent slots: false sharing
    python false_sharing_native.py --pad        # one cache line per slot: the fix
    python false_sharing_native.py --shared     # one slot for all: true sharing
    python false_sharing_native.py --private    # slots on each worker's stack: control

Options: --threads N (2), --seconds S (60), --timestamps PATH, --quiet. On exit it prints one
JSON line (rps = requests of 100,000 items per second, items_per_s). Diagnose it with
``diagnose attach PID --false-sharing`` (no PMU needed): expected
``memory_bandwidth/false_sharing`` by default, ``memory_bandwidth/true_sharing`` with
--shared, neither with --pad or --private.
"""

from __future__ import annotations

import os
import sys

from _native import build

# what `diagnose demo` expects of this sample (samples/README.md), the intended one first
EXPECTED_VERDICTS = ("memory_bandwidth/false_sharing",)

if __name__ == "__main__":
    if any(a in ("-h", "--help") for a in sys.argv[1:]):
        print(__doc__)
        sys.exit(0)
    exe = str(build("false_sharing_counters.c"))
    os.execv(exe, [exe, *sys.argv[1:]])
