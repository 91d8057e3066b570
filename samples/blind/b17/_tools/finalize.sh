#!/usr/bin/env bash
cd /work/blind/b17
P=/work/main/.venv/bin/python
for sid in "$@"; do
  $P - "$sid" <<'PY'
import sys, subprocess
sys.path.insert(0, "/work/blind/b17/_tools")
from report import summary, med
sid = sys.argv[1]
A, B, r, sep = summary(sid)
extra = ""
if sid == "s03":
    extra = (f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs 80 ms downstream delay, B p50 {med(B,'p50_ms')[0]:.1f} ms vs 40 ms; "
             f"CPU A {med(A,'cpu_cores')[0]:.2f} / B {med(B,'cpu_cores')[0]:.2f} cores")
if sid == "s04":
    extra = (f"offered 12 req/s (A) vs 24 req/s (B); served A {med(A,'throughput')[0]:.1f} / B {med(B,'throughput')[0]:.1f} req/s; "
             f"CPU A {med(A,'cpu_cores')[0]:.3f} / B {med(B,'cpu_cores')[0]:.3f} cores")
# per-id extras for io/idle ids, e.g.:
# if sid == "sNN":
#     extra = f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs X ms downstream; CPU {med(A,'cpu_cores')[0]:.2f} cores"
if r >= 1.3 and sep:
    v = "kept"
else:
    v = f"dropped: B/A {r:.2f}, every B > every A: {str(sep).lower()} (criterion not met)"
subprocess.run([sys.executable, "/work/blind/b17/_tools/setverdict.py", sid, v, extra], check=True)
PY
done
