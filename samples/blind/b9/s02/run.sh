#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18721 --users 8 \
  --env SVC_PORT=18721 --env SVC_CACHE_PORT=18722 --env SVC_CACHE_DELAY_MS=6 \
  --env-a SVC_CACHE_CONNS=1 --env-b SVC_CACHE_CONNS=8 -- /work/main/.venv/bin/python service.py
