"""Summarise results/*.jsonl per service (medians, ranges), used to fill label.toml results and README."""
import glob
import json
import os
import statistics
import tomllib

B5 = "/work/blind/b21"


def load(sid):
    A, B = [], []
    p = f"{B5}/results/{sid}.jsonl"
    if not os.path.exists(p):
        return A, B
    for line in open(p):
        d = json.loads(line)
        (A if d["res"]["variant"] == "a" else B).append(d["res"])
    return A, B


def med(v, k):
    xs = [r[k] for r in v if r.get(k) is not None]
    return (statistics.median(xs), min(xs), max(xs)) if xs else (None, None, None)


def fmt(v):
    t = med(v, "throughput")
    return (f"{t[0]:.1f} [{t[1]:.1f}-{t[2]:.1f}] rps, p50 {med(v,'p50_ms')[0]:.1f} ms, p99 {med(v,'p99_ms')[0]:.1f} ms, "
            f"CPU {med(v,'cpu_cores')[0]:.2f}")


def summary(sid):
    A, B = load(sid)
    ta, tb = med(A, "throughput"), med(B, "throughput")
    ratio = tb[0] / ta[0]
    sep = tb[1] > ta[2]
    return A, B, ratio, sep


if __name__ == "__main__":
    for d in sorted(glob.glob(f"{B5}/s[0-9][0-9]")):
        sid = os.path.basename(d)
        A, B = load(sid)
        if not A:
            continue
        _, _, r, sep = summary(sid)
        print(sid, "A:", fmt(A), "| B:", fmt(B), f"| B/A {r:.2f} separated={sep} n={len(A)}/{len(B)}")
