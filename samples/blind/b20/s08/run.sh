#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18858 --users 4 \
  --env SVC_PORT=18858 --env SVC_STORE_PORT=18859 --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_STORE_DELAY_MS=50 --env-b SVC_STORE_DELAY_MS=10 \
  -- /work/main/.venv/bin/python service.py
