#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18856 --users 6 \
  --env SVC_PORT=18856 --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_PARTIAL_TOPK=0 --env-b SVC_PARTIAL_TOPK=1 \
  -- /work/main/.venv/bin/python service.py
