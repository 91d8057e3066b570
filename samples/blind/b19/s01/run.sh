#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18801 --users 4 \
  --env SVC_PORT=18801 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_LAYERS=6 --env-b SVC_LAYERS=2 \
  -- /work/main/.venv/bin/python service.py
