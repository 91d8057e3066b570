import json, statistics, sys, glob, os
os.chdir("/work/blind/b4/results")
for path in sorted(glob.glob("s*.jsonl")):
    rows = []
    for l in open(path):
        try:
            rows.append(json.loads(l))
        except Exception:
            pass
    A = [r["res"] for r in rows if r["res"] and r["res"].get("variant") == "a"]
    B = [r["res"] for r in rows if r["res"] and r["res"].get("variant") == "b"]
    def med(xs, k):
        v = [x[k] for x in xs if x.get(k) is not None]
        return (statistics.median(v), min(v), max(v)) if v else (None, None, None)
    ta, tb = med(A, "throughput"), med(B, "throughput")
    ratio = tb[0] / ta[0] if (ta[0] and tb[0]) else None
    sep = bool(A and B and min(x["throughput"] for x in B) > max(x["throughput"] for x in A))
    f = lambda t: f"{t[0]:.1f} [{t[1]:.1f}-{t[2]:.1f}]" if t[0] is not None else "-"
    print(path[:-6], f"nA={len(A)} nB={len(B)}", "thrA", f(ta), "thrB", f(tb),
          "ratio", f"{ratio:.2f}" if ratio else "-", "sep", sep,
          "p50A", f(med(A, "p50_ms")), "p50B", f(med(B, "p50_ms")),
          "p99A", f(med(A, "p99_ms")), "p99B", f(med(B, "p99_ms")),
          "cpuA", f(med(A, "cpu_cores")), "cpuB", f(med(B, "cpu_cores")))
