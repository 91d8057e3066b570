#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18852 --users 4 \
  --env SVC_PORT=18852 --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_FAST_DECODE=0 --env-b SVC_FAST_DECODE=1 \
  -- /work/main/.venv/bin/python service.py
