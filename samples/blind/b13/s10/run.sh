#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18810 --users 4 \
  --env SVC_LIFETIME=$L --env-a SVC_STORE_DELAY_MS=40 --env-b SVC_STORE_DELAY_MS=10 \
  -- /work/main/.venv/bin/python service.py
