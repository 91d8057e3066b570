#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18541 --users 4 --env SVC_PORT=18541 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_EMBED_LATENCY_MS=50 --env-b SVC_EMBED_LATENCY_MS=25 -- /work/main/.venv/bin/python service.py
