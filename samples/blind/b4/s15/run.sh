#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18215 --users 8 --warmup 5 \
  --env-a SVC_STORE_CONNECTIONS=1 --env-b SVC_STORE_CONNECTIONS=8 \
  -- /work/main/.venv/bin/python service.py
