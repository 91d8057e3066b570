#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18803 --users 6 \
  --env SVC_PORT=18803 --env SVC_STORE_PORT=18893 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_STORE_DELAY_MS=80 --env-b SVC_STORE_DELAY_MS=40 \
  -- /work/main/.venv/bin/python service.py
