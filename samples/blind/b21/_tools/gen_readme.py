import glob
import os
import sys
import tomllib

sys.path.insert(0, "/work/blind/b21/_tools")
from report import load, fmt, summary

for d in sorted(glob.glob("/work/blind/b21/s[0-9][0-9]")):
    sid = os.path.basename(d)
    lab = tomllib.load(open(f"{d}/label.toml", "rb"))
    A, B = load(sid)
    if A and B:
        _, _, r, sep = summary(sid)
        meas = f"A {fmt(A)}; B {fmt(B)}; B/A {r:.2f}, separated: {str(sep).lower()}"
    else:
        meas = "not measured"
    mixed = f"yes ({lab['secondary']})" if lab.get("mixed") else "no"
    cf = lab["counterfactual"]["why"].replace("|", "/")
    print(f"| {sid} | {lab['stack']} | {lab['category']}/{lab['kind']} | {mixed} | {cf} | {meas} | {lab['verdict']} |")
