#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18408 --users 8 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_SENT_POOL=per_request --env-b SVC_SENT_POOL=shared -- /work/main/.venv/bin/python service.py
