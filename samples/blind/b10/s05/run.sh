#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 12 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env OPENBLAS_NUM_THREADS=1 --env SVC_WORKERS=6 --env SVC_CLIENTS=12 --env SVC_CACHE_DELAY_MS=2 \
  --env-a SVC_SHARED_CLIENT=1 --env-b SVC_SHARED_CLIENT=0 \
  -- /work/main/.venv/bin/python service.py
