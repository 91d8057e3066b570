#!/usr/bin/env bash
cd /work/blind/b15
P=/work/main/.venv/bin/python
for sid in "$@"; do
  $P - "$sid" <<'PY'
import sys, subprocess
sys.path.insert(0, "/work/blind/b15/_tools")
from report import summary, med
sid = sys.argv[1]
A, B, r, sep = summary(sid)
extra = ""
# per-id extras for io/idle ids, e.g.:
# if sid == "sNN":
#     extra = f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs X ms downstream; CPU {med(A,'cpu_cores')[0]:.2f} cores"
if sid == "s07":
    extra = (f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs 40 ms store delay, B p50 {med(B,'p50_ms')[0]:.1f} ms vs 10 ms; "
             f"A CPU {med(A,'cpu_cores')[0]:.2f} cores")
    ok = med(A,'p50_ms')[0] < 60 and med(A,'cpu_cores')[0] < 0.5
    if not ok:
        r = 0.0
if sid == "s08":
    extra = (f"A throughput {med(A,'throughput')[0]:.2f} rps vs 4.0 offered, B {med(B,'throughput')[0]:.2f} vs 8.0 offered; "
             f"A CPU {med(A,'cpu_cores')[0]:.3f} cores")
    ok = abs(med(A,'throughput')[0] - 4.0) < 0.4 and abs(med(B,'throughput')[0] - 8.0) < 0.8 and med(A,'cpu_cores')[0] < 0.1
    if not ok:
        r = 0.0
if r >= 1.3 and sep:
    v = "kept"
else:
    v = f"dropped: B/A {r:.2f}, every B > every A: {str(sep).lower()} (criterion not met)"
subprocess.run([sys.executable, "/work/blind/b15/_tools/setverdict.py", sid, v, extra], check=True)
PY
done
