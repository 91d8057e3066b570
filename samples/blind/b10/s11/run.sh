#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 12 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env OPENBLAS_NUM_THREADS=1 --env SVC_CONSUMERS=2 --env SVC_BROKER_DELAY_MS=2 \
  --env-a SVC_TOPK=sort --env-b SVC_TOPK=partition \
  -- /work/main/.venv/bin/python service.py
