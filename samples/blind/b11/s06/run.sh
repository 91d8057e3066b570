#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_LIFETIME=$((S + 20)) --env SVC_WORKERS=4 --env SVC_BATCH=16 \
  --env-a SVC_INTRA_THREADS=4 --env-b SVC_INTRA_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
