#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18808 --users 6 \
  --env SVC_LIFETIME=$((S + 40)) \
  --env-a SVC_BUFFERS=fresh --env-b SVC_BUFFERS=reuse \
  -- /work/main/.venv/bin/python service.py
