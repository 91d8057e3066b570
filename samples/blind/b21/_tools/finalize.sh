#!/usr/bin/env bash
cd /work/blind/b21
P=/work/main/.venv/bin/python
for sid in "$@"; do
  $P - "$sid" <<'PY'
import sys, subprocess
sys.path.insert(0, "/work/blind/b21/_tools")
from report import summary, med
sid = sys.argv[1]
A, B, r, sep = summary(sid)
extra = ""
# per-id extras for io/idle ids, e.g.:
# if sid == "sNN":
#     extra = f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs X ms downstream; CPU {med(A,'cpu_cores')[0]:.2f} cores"
if sid == "s11":
    extra = (f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs 80 ms downstream reply (B p50 {med(B,'p50_ms')[0]:.1f} ms vs 30 ms); "
             f"CPU A {med(A,'cpu_cores')[0]:.2f} / B {med(B,'cpu_cores')[0]:.2f} cores")
if sid == "s12":
    extra = (f"A throughput {med(A,'throughput')[0]:.2f}/s vs arrival 20/s, B {med(B,'throughput')[0]:.2f}/s vs arrival 40/s; "
             f"CPU A {med(A,'cpu_cores')[0]:.3f} / B {med(B,'cpu_cores')[0]:.3f} cores")
if r >= 1.3 and sep:
    v = "kept"
else:
    v = f"dropped: B/A {r:.2f}, every B > every A: {str(sep).lower()} (criterion not met)"
subprocess.run([sys.executable, "/work/blind/b21/_tools/setverdict.py", sid, v, extra], check=True)
PY
done
