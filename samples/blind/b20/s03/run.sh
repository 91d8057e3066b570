#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18853 --users 8 \
  --env SVC_PORT=18853 --env SVC_STORE_PORT=18854 --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_CONN_PER_THREAD=0 --env-b SVC_CONN_PER_THREAD=1 \
  -- /work/main/.venv/bin/python service.py
