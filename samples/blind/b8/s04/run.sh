#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18641 --users 4 --env SVC_LIFETIME=$((S+60)) --env SVC_PORT=18641 --env SVC_BACKEND_PORT=18642 \
  --env-a SVC_BACKEND_DELAY_MS=50 --env-b SVC_BACKEND_DELAY_MS=25 -- /work/main/.venv/bin/python service.py
