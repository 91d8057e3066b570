#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18804 --users 12 \
  --env SVC_STORE_DELAY_MS=8 --env-a SVC_STORE_CONN=shared --env-b SVC_STORE_CONN=per_thread \
  -- /work/main/.venv/bin/python service.py
