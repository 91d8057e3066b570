#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_CONSUMERS=2 \
  --env SVC_BROKER_PORT=18859 --env SVC_STORE_PORT=18869 \
  --env-a SVC_STORE_DELAY_MS=20 --env-b SVC_STORE_DELAY_MS=6 \
  -- /work/main/.venv/bin/python service.py
