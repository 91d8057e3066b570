import json, os, sys
sys.path.insert(0, os.path.dirname(__file__))
from meta import META
from write_labels import main as write, fmt

ROOT = "/work/blind/b4"
v = json.load(open(f"{ROOT}/_tools/verdicts.json")) if os.path.exists(f"{ROOT}/_tools/verdicts.json") else {}
res = write(v)
rows = []
kept = []
for id_, (m, s, verdict) in res.items():
    cf = ", ".join(f"{k}: {m['env_a'].get(k, '')}→{m['env_b'].get(k, '')}" for k in m["env_b"]) or \
         ", ".join(f"{k}: {m['load_env_a'][k]}→{m['load_env_b'][k]}" for k in m.get("load_env_b", {}))
    if s:
        meas = (f"thr A {fmt(s['throughput'][0])} / B {fmt(s['throughput'][1])} (B/A {s['ratio']:.2f}x, all B>all A: {'yes' if s['sep'] else 'no'}); "
                f"p50 A {fmt(s['p50_ms'][0])} / B {fmt(s['p50_ms'][1])} ms; p99 A {fmt(s['p99_ms'][0])} / B {fmt(s['p99_ms'][1])} ms; "
                f"CPU A {fmt(s['cpu_cores'][0], 2)} / B {fmt(s['cpu_cores'][1], 2)} cores; n={s['n'][0]}+{s['n'][1]}")
    else:
        meas = "not measured"
    if m.get("checks"):
        meas += "; " + m["checks"]
    mixed = f"yes, second {m['second']}" if m.get("second") else "no"
    rows.append(f"| {id_} | {m['stack']} | {m['category']}/{m['kind']} | {mixed} | {cf} | {meas} | {verdict} |")
    if verdict == "kept":
        kept.append(id_)
tmpl = open(f"{ROOT}/_tools/README.head.md").read()
out = tmpl.replace("{{TABLE}}", "\n".join(rows)).replace("{{KEPT}}", ", ".join(kept))
open(f"{ROOT}/README.md", "w").write(out)
print("kept:", kept)
