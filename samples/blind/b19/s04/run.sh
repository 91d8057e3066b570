#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18804 --users 4 \
  --env SVC_PORT=18804 --env SVC_STORE_PORT=18824 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a STORE_DELAY_MS=60 --env-b STORE_DELAY_MS=15 \
  -- /work/main/.venv/bin/python service.py
