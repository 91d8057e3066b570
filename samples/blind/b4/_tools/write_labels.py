import json, statistics, sys, os
sys.path.insert(0, os.path.dirname(__file__))
from meta import META

ROOT = "/work/blind/b4"


def q(s):
    return json.dumps(s)


def tbl(d):
    return "{ " + ", ".join(f"{k} = {q(v)}" for k, v in d.items()) + " }" if d else "{}"


def load(id_):
    p = f"{ROOT}/results/{id_}.jsonl"
    rows = [json.loads(l) for l in open(p)] if os.path.exists(p) else []
    A = [r["res"] for r in rows if r.get("res") and r["res"].get("variant") == "a" and r["res"]["requests"] > 0]
    B = [r["res"] for r in rows if r.get("res") and r["res"].get("variant") == "b" and r["res"]["requests"] > 0]
    return A, B


def stat(xs, k):
    v = [x[k] for x in xs if x.get(k) is not None]
    return (statistics.median(v), min(v), max(v)) if v else None


def summarize(id_):
    A, B = load(id_)
    if not A or not B:
        return None
    s = {k: (stat(A, k), stat(B, k)) for k in ("throughput", "p50_ms", "p99_ms", "cpu_cores")}
    s["n"] = (len(A), len(B))
    s["ratio"] = s["throughput"][1][0] / s["throughput"][0][0]
    s["sep"] = min(x["throughput"] for x in B) > max(x["throughput"] for x in A)
    return s


def fmt(t, nd=1):
    return f"{t[0]:.{nd}f} [{t[1]:.{nd}f}-{t[2]:.{nd}f}]"


def main(verdicts):
    out = {}
    for id_, m in META.items():
        s = summarize(id_)
        verdict = verdicts.get(id_)
        if s:
            res = (f"{s['n'][0]}xA / {s['n'][1]}xB runs of 12 s after 5 s warm-up, alternating A,B; median [min-max]: "
                   f"throughput A {fmt(s['throughput'][0])} vs B {fmt(s['throughput'][1])} req/s (B/A {s['ratio']:.2f}x, "
                   f"every B > every A: {str(s['sep']).lower()}); p50 A {fmt(s['p50_ms'][0])} vs B {fmt(s['p50_ms'][1])} ms; "
                   f"p99 A {fmt(s['p99_ms'][0])} vs B {fmt(s['p99_ms'][1])} ms; service CPU A {fmt(s['cpu_cores'][0], 2)} vs B {fmt(s['cpu_cores'][1], 2)} cores")
            if verdict is None:
                if min(s["n"]) < 3:
                    verdict = "dropped: fewer than 3 A/B rounds finished before the deadline"
                else:
                    verdict = "kept" if (s["ratio"] >= 1.3 and s["sep"]) else f"dropped: B/A {s['ratio']:.2f}x, every B > every A: {str(s['sep']).lower()}"
        else:
            res = "not measured"
            verdict = verdict or "dropped: not measured before the deadline"
        load_desc = m.get("load") or (f"locust -f locustfile.py --headless -u {m['users']} -r {m['users']} "
                                      f"-H http://127.0.0.1:{m['port']} (closed loop, separate session)")
        lines = [f'id = "{id_}"', f"category = {q(m['category'])}", f"kind = {q(m['kind'])}", f"why = {q(m['why'])}"]
        if m.get("second"):
            lines.append(f"second = {q(m['second'])}")
        lines.append(f"stack = {q(m['stack'])}")
        lines.append(f"verdict = {q(verdict)}")
        env_a = dict(m["env_a"]); env_a.update(m.get("load_env_a", {}))
        env_b = dict(m["env_b"]); env_b.update(m.get("load_env_b", {}))
        lines += ["", "[run]", 'argv = ["./run.sh", "a", "15"]', f"env = {tbl(env_a)}", f"load = {q(load_desc)}", "warmup_s = 5",
                  "", "[counterfactual]", 'argv = ["./run.sh", "b", "15"]', f"env = {tbl(env_b)}", f"why = {q(m['cf_why'])}",
                  f"result = {q(res)}"] + ([f"checks = {q(m['checks'])}"] if m.get("checks") else []) + [""]
        open(f"{ROOT}/{id_}/label.toml", "w").write("\n".join(lines))
        out[id_] = (m, s, verdict)
    return out


if __name__ == "__main__":
    v = json.load(open(f"{ROOT}/_tools/verdicts.json")) if os.path.exists(f"{ROOT}/_tools/verdicts.json") else {}
    for id_, (m, s, verdict) in main(v).items():
        print(id_, verdict, f"{s['ratio']:.2f}" if s else "-")
