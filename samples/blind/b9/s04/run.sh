#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18741 --users 4 \
  --env SVC_PORT=18741 --env SVC_STORE_PORT=18742 \
  --env-a SVC_STORE_DELAY_MS=50 --env-b SVC_STORE_DELAY_MS=25 -- /work/main/.venv/bin/python service.py
