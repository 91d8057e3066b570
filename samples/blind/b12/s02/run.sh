#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18802 --users 6 \
  --env-a SVC_DRAFT=0 --env-b SVC_DRAFT=1 \
  -- /work/main/.venv/bin/python service.py
