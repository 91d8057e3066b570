#!/usr/bin/env bash
# usage: ./run.sh [a|b] SECONDS
set -u
cd "$(dirname "$0")"
VARIANT="${1:-a}"; SECS="${2:-20}"
PY=/work/main/.venv/bin/python
LOCUST=/work/main/.venv/bin/locust
PORT=18137
WARM=6
USERS=4
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
  a) export SVC_LAYERS=6 ;;
  b) export SVC_LAYERS=2 ;;
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

setsid "$PY" service.py --port "$PORT" --workers 2 >"$TMP/svc.log" 2>&1 &
SPID=$!
up=0
for i in $(seq 1 480); do
  if curl -sf -o /dev/null "http://127.0.0.1:$PORT/health"; then up=1; break; fi
  kill -0 "$SPID" 2>/dev/null || break
  sleep 0.25
done
if [ "$up" != 1 ]; then echo "service failed to start (alive: $(kill -0 "$SPID" 2>/dev/null && echo yes || echo no))" >&2; tail -20 "$TMP/svc.log" >&2; exit 1; fi
echo "PID $SPID"

# warm-up load (not measured)
setsid "$LOCUST" --headless -u "$USERS" -r "$USERS" -t "${WARM}s" --host "http://127.0.0.1:$PORT" -f locustfile.py --only-summary --loglevel ERROR >/dev/null 2>&1 &
LPID=$!; wait "$LPID"; LPID=""

# measured load
setsid "$LOCUST" --headless -u "$USERS" -r "$USERS" -t "${SECS}s" --host "http://127.0.0.1:$PORT" -f locustfile.py --only-summary --loglevel ERROR --csv "$TMP/m" >/dev/null 2>&1 &
LPID=$!
sleep 2; c0=$(cpu_ticks "$SPID"); t0=$(now)
sleep $((SECS-3)); c1=$(cpu_ticks "$SPID"); t1=$(now)
wait "$LPID"; LPID=""
"$PY" - "$VARIANT" "$TMP/m_stats.csv" "$c0" "$c1" "$t0" "$t1" <<'EOF'
import csv, json, sys, os
v, path, c0, c1, t0, t1 = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), float(sys.argv[6])
row = [r for r in csv.DictReader(open(path)) if r["Name"] == "Aggregated"][0]
hz = os.sysconf("SC_CLK_TCK")
print(json.dumps({"variant": v, "throughput_rps": round(float(row["Requests/s"]), 2),
                  "p50_ms": float(row["50%"]), "p99_ms": float(row["99%"]),
                  "cpu_cores": round((c1 - c0) / hz / (t1 - t0), 3),
                  "failures": int(row["Failure Count"])}))
EOF
