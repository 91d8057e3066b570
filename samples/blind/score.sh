#!/usr/bin/env bash
# First-sight scoring of a blind batch: for each service, start its labelled variant, wait
# for its warm-up and a quiet host, one default `diagnose attach PID` of 10 s, record the
# verdict. Labels are read only after every verdict is recorded.
set -u
BATCH=${1:-/work/blind/b3}
OUT=${2:-/work/blind/score/b3-$(date +%Y%m%d-%H%M)}
DIAG=/work/main/.venv/bin/diagnose
mkdir -p "$OUT"
for dir in "$BATCH"/s*/; do
  id=$(basename "$dir")
  [ -n "${IDS:-}" ] && [[ " $IDS " != *" $id "* ]] && continue  # IDS="s04 s12": those only
  [ -x "$dir/run.sh" ] || { echo "$id: no run.sh" >> "$OUT/skipped"; continue; }
  grep -q '^verdict.*dropped' "$dir/label.toml" 2>/dev/null && { echo "$id: dropped" >> "$OUT/skipped"; continue; }
  warm=$(grep -E '^warmup_s' "$dir/label.toml" | head -1 | sed 's/[^0-9.]//g'); warm=${warm:-8}
  # a quiet host first: load average below 1.5 (waited for at most 90 s)
  for _ in $(seq 1 45); do awk '{exit !($1 < 1.5)}' /proc/loadavg && break; sleep 2; done
  load_before=$(cut -d' ' -f1 /proc/loadavg)
  # $! must be setsid's own PID (it execs run.sh, which execs the harness: the leader of the
  # session whose load generator is signalled below); with `cd && setsid ... &` it was the
  # list's subshell, the TERM reached nobody and each HTTP service's locust went on at a
  # core for a minute into the next captures (batches 12 and 13)
  (cd "$dir" || exit; setsid ./run.sh a 90 > "$OUT/$id.run.out" 2> "$OUT/$id.run.err" & echo $! > "$OUT/$id.runpid")
  pid=""
  for _ in $(seq 1 120); do
    pid=$(grep -m1 '^PID ' "$OUT/$id.run.out" 2>/dev/null | awk '{print $2}')
    [ -n "$pid" ] && break; sleep 0.5
  done
  if [ -z "$pid" ]; then echo "$id: no PID" >> "$OUT/skipped"; pkill -TERM -s "$(cat "$OUT/$id.runpid")" 2>/dev/null; continue; fi
  sleep "$warm"
  $DIAG attach "$pid" -o "$OUT/$id.bundle" --format json,md > "$OUT/$id.attach.out" 2> "$OUT/$id.attach.err"
  rc=$?
  python3 - "$OUT/$id.bundle/report.json" "$id" "$rc" "$load_before" >> "$OUT/verdicts.jsonl" <<'PY'
import json, sys
path, sid, rc, load = sys.argv[1:5]
try:
    r = json.load(open(path))
    v = r["verdict"]
    sv = (r.get("service") or {}).get("verdict") or {}
    out = {"id": sid, "rc": int(rc), "load_before": float(load), "category": sv.get("primary") or v["primary"],
           "kind": sv.get("kind") if sv else v.get("kind"), "confidence": sv.get("confidence") if sv else v.get("confidence"),
           "process_category": v["primary"], "process_kind": v.get("kind"), "target_pid": r["target"]["pid"]}
except Exception as exc:
    out = {"id": sid, "rc": int(rc), "error": f"{type(exc).__name__}: {exc}"}
print(json.dumps(out))
PY
  rp=$(cat "$OUT/$id.runpid")
  # the runner starts the service in a session of its own: end that one too, and wait for
  # it, or it takes the cores during the next service's capture (batch 5's s12 shared the
  # host with s09's and s11's services)
  sid=$(ps -o sid= -p "$pid" 2>/dev/null | tr -d ' ')
  kill -TERM -- -"$rp" 2>/dev/null
  for _ in $(seq 1 40); do
    left=$( [ -n "$sid" ] && ps -eo sid=,pid= | awk -v s="$sid" '$1 == s {print $2}')
    [ -z "$left" ] && break; sleep 0.5
  done
  # the harness ends its load generator's session on TERM: wait for it, then kill what is left
  for _ in $(seq 1 30); do kill -0 "$rp" 2>/dev/null || break; sleep 0.5; done
  kill -KILL -- -"$rp" 2>/dev/null
  [ -n "$sid" ] && ps -eo sid=,pid= | awk -v s="$sid" '$1 == s {print $2}' | xargs -r kill -KILL 2>/dev/null
  # nothing of this service may run into the next capture (its load generator, its children)
  left=$(for c in /proc/[0-9]*/cwd; do [ "$(readlink "$c" 2>/dev/null)" = "${dir%/}" ] && basename "$(dirname "$c")"; done)
  [ -n "$left" ] && { echo "$id: killed what outlived it: $left" >> "$OUT/skipped"; echo "$left" | xargs -r kill -KILL 2>/dev/null; }
  echo "$id done: $(tail -1 "$OUT/verdicts.jsonl")"
done
echo "verdicts: $OUT/verdicts.jsonl"
