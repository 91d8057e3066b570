#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18862 --users 4 \
  --env SVC_PORT=18862 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) --env SVC_MAINT_PROCS=3 \
  --env-a SVC_MAINT_NICE=0 --env-b SVC_MAINT_NICE=19 \
  -- /work/main/.venv/bin/python service.py
