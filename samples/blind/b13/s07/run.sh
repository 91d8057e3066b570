#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$L --env SVC_CLIENTS=6 --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_INDEX_REBUILD=1 --env-b SVC_INDEX_REBUILD=0 \
  -- /work/main/.venv/bin/python service.py
