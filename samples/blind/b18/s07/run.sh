#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18857 --users 4 \
  --env SVC_PORT=18857 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) --env SVC_SHARDS=2 \
  --env-a SVC_KEEP_POOL=0 --env-b SVC_KEEP_POOL=1 \
  -- /work/main/.venv/bin/python service.py
