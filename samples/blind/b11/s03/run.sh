#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_LIFETIME=$((S + 20)) --env SVC_STORE_PORT=18803 --env STORE_DELAY_MS=1.0 \
  --env-a SVC_STORE_CONNS=shared --env-b SVC_STORE_CONNS=per-thread \
  -- /work/main/.venv/bin/python service.py
