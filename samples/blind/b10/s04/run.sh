#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 25 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18804 --users 4 \
  --env-a SVC_STORE_DELAY_MS=50 --env-b SVC_STORE_DELAY_MS=25 \
  -- /work/main/.venv/bin/python service.py
