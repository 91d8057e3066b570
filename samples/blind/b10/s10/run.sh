#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 12 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env OPENBLAS_NUM_THREADS=1 --env SVC_CLIENTS=6 --env-a SVC_POOL=per_request --env-b SVC_POOL=shared \
  -- /work/main/.venv/bin/python service.py
