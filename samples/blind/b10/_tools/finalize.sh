#!/usr/bin/env bash
cd /work/blind/b10
P=/work/main/.venv/bin/python
for sid in "$@"; do
  $P - "$sid" <<'PY'
import sys, subprocess
sys.path.insert(0, "/work/blind/b10/_tools")
from report import summary, med
sid = sys.argv[1]
A, B, r, sep = summary(sid)
extra = ""
if sid == "s04":
    extra = f"A p50 {med(A,'p50_ms')[0]:.1f} ms vs 50 ms downstream, B p50 {med(B,'p50_ms')[0]:.1f} ms vs 25 ms; service+helper CPU {med(A,'cpu_cores')[0]:.2f}/{med(B,'cpu_cores')[0]:.2f} cores"
if sid == "s09":
    extra = f"arrival 20 vs 40 req/s; served {med(A,'throughput')[0]:.1f} vs {med(B,'throughput')[0]:.1f} req/s; CPU {med(A,'cpu_cores')[0]:.3f}/{med(B,'cpu_cores')[0]:.3f} cores"
if r >= 1.3 and sep:
    v = "kept"
else:
    v = f"dropped: B/A {r:.2f}, every B > every A: {str(sep).lower()} (criterion not met)"
subprocess.run([sys.executable, "/work/blind/b10/_tools/setverdict.py", sid, v, extra], check=True)
PY
done
