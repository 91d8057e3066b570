#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18807 --users 8 \
  --env SVC_LIFETIME=$((S + 40)) --env SVC_CHUNKS=16 \
  --env-a SVC_POOL=per-request --env-b SVC_POOL=shared \
  -- /work/main/.venv/bin/python service.py
