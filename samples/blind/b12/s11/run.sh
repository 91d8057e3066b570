#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_WORKERS=2 --env SVC_CLIENTS=6 --env-a SVC_COMPACTION_JOBS=2 --env-b SVC_COMPACTION_JOBS=0 \
  -- /work/main/.venv/bin/python service.py
