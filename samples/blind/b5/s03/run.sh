#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18303 --users 8 \
  --env SVC_PORT=18303 --env SVC_STORE_PORT=18353 --env SVC_STORE_DELAY_MS=6 \
  --env-a SVC_STORE_CONNS=1 --env-b SVC_STORE_CONNS=8 \
  -- /work/main/.venv/bin/python service.py
