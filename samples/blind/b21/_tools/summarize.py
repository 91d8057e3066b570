import json, statistics, sys, glob, os
rows = {}
for p in sorted(glob.glob("/work/blind/b21/results/s*.jsonl")):
    sid = os.path.basename(p)[:-6]
    A, B = [], []
    for line in open(p):
        d = json.loads(line)
        (A if d["res"]["variant"] == "a" else B).append(d["res"])
    def s(v, k):
        xs = [r[k] for r in v if r.get(k) is not None]
        return (statistics.median(xs), min(xs), max(xs)) if xs else (None, None, None)
    ta, tb = s(A, "throughput"), s(B, "throughput")
    ratio = tb[0] / ta[0] if ta[0] else None
    sep = tb[1] > ta[2] if ta[0] and tb[0] else None
    print(f"{sid} nA={len(A)} nB={len(B)} A thr {ta[0]} [{ta[1]}-{ta[2]}] p50 {s(A,'p50_ms')[0]} p99 {s(A,'p99_ms')[0]} cpu {s(A,'cpu_cores')[0]} | "
          f"B thr {tb[0]} [{tb[1]}-{tb[2]}] p50 {s(B,'p50_ms')[0]} p99 {s(B,'p99_ms')[0]} cpu {s(B,'cpu_cores')[0]} | ratio {ratio and round(ratio,2)} sep {sep} err {sum(r['errors'] for r in A+B)}")
