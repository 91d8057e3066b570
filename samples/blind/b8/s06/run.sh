#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18661 --users 8 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_POOL=request --env-b SVC_POOL=shared \
  -- /work/main/.venv/bin/gunicorn -w 2 -k sync -b 127.0.0.1:18661 --log-level warning --timeout 60 service:app
