#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 20 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode pipe --producer producer.py \
  --env OPENBLAS_NUM_THREADS=1 --env SVC_ITEMS=1200000 --env-a SVC_DIM=64 --env-b SVC_DIM=16 \
  -- /work/main/.venv/bin/python service.py
