#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18808 --users 4 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env SVC_STORE_PORT=18809 \
  --env-a SVC_STORE_DELAY_MS=40 --env-b SVC_STORE_DELAY_MS=15 \
  -- /work/main/.venv/bin/python service.py
