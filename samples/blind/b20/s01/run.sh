#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18851 --users 4 \
  --env SVC_PORT=18851 --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_LAYERS=8 --env-b SVC_LAYERS=3 \
  -- /work/main/.venv/bin/python service.py
