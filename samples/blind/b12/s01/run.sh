#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18801 --users 8 \
  --env-a SVC_LAYERS=8 --env-a SVC_HIDDEN=512 --env-b SVC_LAYERS=2 --env-b SVC_HIDDEN=256 \
  -- /work/main/.venv/bin/python service.py
