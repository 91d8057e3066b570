#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18805 --users 4 \
  --env SVC_LIFETIME=$((S + 40)) --env SVC_PRICING_PORT=18815 \
  --env-a PRICING_DELAY_MS=60 --env-b PRICING_DELAY_MS=15 \
  -- /work/main/.venv/bin/python service.py
