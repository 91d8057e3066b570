#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_CLIENTS=8 --env-a SVC_MAX_BATCH=1 --env-b SVC_MAX_BATCH=8 \
  -- /work/main/.venv/bin/python service.py
