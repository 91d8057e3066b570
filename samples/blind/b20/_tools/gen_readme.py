import sys
import tomllib

sys.path.insert(0, "/work/blind/b20/_tools")
from report import fmt, load, summary

ids = [f"s{i:02d}" for i in range(1, 13)]
rows = []
import os
for sid in ids:
    if not os.path.exists(f"/work/blind/b20/{sid}/label.toml") or not load(sid)[0]:
        continue
    lab = tomllib.load(open(f"/work/blind/b20/{sid}/label.toml", "rb"))
    A, B, r, sep = summary(sid)
    mixed = f"yes: {lab['secondary']}" if lab.get("mixed") else "no"
    cf = lab["counterfactual"]["why"]
    meas = f"A: {fmt(A)}<br>B: {fmt(B)}<br>B/A {r:.2f}, every B > every A: {'yes' if sep else 'no'}"
    v = lab["verdict"]
    rows.append(f"| {sid} | {lab['stack']} | {lab['category']}/{lab['kind']} | {mixed} | {cf} | {meas} | {v} |")
print("\n".join(rows))
