#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18404 --users 4 --env SVC_LIFETIME=$((S+60)) \
  --env EMB_PORT=18454 --env-a EMB_DELAY_MS=50 --env-b EMB_DELAY_MS=25 -- /work/main/.venv/bin/python service.py
