#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_BROKER_PORT=18831 --env SVC_WORKERS=2 \
  --env-a SVC_REFRESH_NICE=0 --env-b SVC_REFRESH_NICE=19 \
  -- /work/main/.venv/bin/python service.py
