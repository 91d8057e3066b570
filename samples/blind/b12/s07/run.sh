#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18807 --users 2 \
  --env-a SVC_PROFILE_DELAY_MS=40 --env-b SVC_PROFILE_DELAY_MS=10 \
  -- /work/main/.venv/bin/python service.py
