#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_WORKERS=2 --env SVC_CLIENTS=4 --env-a SVC_TABLE_REUSE=0 --env-b SVC_TABLE_REUSE=1 \
  -- /work/main/.venv/bin/python service.py
