#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18810 --users 8 \
  --env-a SVC_SHARED_POOL=0 --env-b SVC_SHARED_POOL=1 \
  -- /work/main/.venv/bin/python service.py
