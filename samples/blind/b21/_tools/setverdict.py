import sys
sys.path.insert(0, "/work/blind/b21/_tools")
from report import load, fmt, summary

sid, verdict = sys.argv[1], sys.argv[2]
extra = sys.argv[3] if len(sys.argv) > 3 else ""
A, B, r, sep = summary(sid)
res = f"verify.sh 3 12: A {fmt(A)}; B {fmt(B)}; B/A median throughput {r:.2f}, every B > every A: {str(sep).lower()}"
if extra:
    res += "; " + extra
p = f"/work/blind/b21/{sid}/label.toml"
s = open(p).read()
s = s.replace('verdict = "pending"', f'verdict = "{verdict}"')
s = s.replace('result = "pending"', f'result = "{res}"')
open(p, "w").write(s)
print(sid, verdict, res)
