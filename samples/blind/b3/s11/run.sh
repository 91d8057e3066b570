#!/usr/bin/env bash
# usage: ./run.sh [a|b] SECONDS
set -u
cd "$(dirname "$0")"
VARIANT="${1:-a}"; SECS="${2:-20}"
PY=/work/main/.venv/bin/python
LOCUST=/work/main/.venv/bin/locust
PORT=0
WARM=4
USERS=0
[ "$SECS" -lt 5 ] && SECS=5
TMP=$(mktemp -d)
SPID=""; LPID=""
cleanup() {
  trap - EXIT INT TERM
  for p in $LPID $SPID; do kill -TERM -- -"$p" 2>/dev/null; done
  for i in $(seq 1 40); do
    alive=0; for p in $LPID $SPID; do kill -0 -- -"$p" 2>/dev/null && alive=1; done
    [ "$alive" = 0 ] && break; sleep 0.25
  done
  for p in $LPID $SPID; do kill -KILL -- -"$p" 2>/dev/null; done
  rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

case "$VARIANT" in
  a) export SVC_RATE=0.2 ;;
  b) export SVC_RATE=200 ;;
  *) echo "usage: $0 [a|b] SECONDS" >&2; exit 2 ;;
esac

# CPU ticks of every process in the service's session (service + its children)
cpu_ticks() { "$PY" -c '
import os,sys
sid=int(sys.argv[1]); t=0
for d in os.listdir("/proc"):
    if not d.isdigit(): continue
    try: s=open("/proc/%s/stat"%d).read()
    except OSError: continue
    f=s[s.rindex(")")+2:].split()
    if int(f[3])==sid: t+=int(f[11])+int(f[12])
print(t)' "$1"; }
now() { date +%s.%N; }

setsid "$PY" service.py --seconds $((WARM+SECS)) --warmup "$WARM" >"$TMP/svc.out" 2>"$TMP/svc.log" &
SPID=$!
sleep 0.3
kill -0 "$SPID" 2>/dev/null || { echo "service failed to start" >&2; tail -20 "$TMP/svc.log" >&2; exit 1; }
echo "PID $SPID"
sleep $((WARM+1)); c0=$(cpu_ticks "$SPID"); t0=$(now)
sleep $((SECS-2)); c1=$(cpu_ticks "$SPID"); t1=$(now)
wait "$SPID"; SPID=""
"$PY" - "$VARIANT" "$TMP/svc.out" "$c0" "$c1" "$t0" "$t1" <<'EOF'
import json, sys, os
v, path, c0, c1, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
st = None
for line in open(path):
    line = line.strip()
    if line.startswith("{"):
        try: st = json.loads(line)
        except ValueError: pass
hz = os.sysconf("SC_CLK_TCK")
print(json.dumps({"variant": v, "throughput_rps": st["rps"], "p50_ms": st["p50_ms"], "p99_ms": st["p99_ms"],
                  "cpu_cores": round((c1 - c0) / hz / (t1 - t0), 3)}))
EOF
