#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18801 --users 4 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env-a SVC_LAYERS=6 --env-b SVC_LAYERS=2 \
  -- /work/main/.venv/bin/python service.py
