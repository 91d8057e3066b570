#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18406 --users 4 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_STAGING=fresh --env-b SVC_STAGING=reuse -- /work/main/.venv/bin/python service.py
