#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18304 --users 4 \
  --env SVC_PORT=18304 --env SVC_WORKERS=4 --env SVC_EMB_PORT=18354 \
  --env-a SVC_EMB_DELAY_MS=60 --env-b SVC_EMB_DELAY_MS=20 \
  -- /work/main/.venv/bin/python service.py
