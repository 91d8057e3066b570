#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$L --env SVC_CLIENTS=4 --env SVC_WORKERS=2 --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_TOPK=sort --env-b SVC_TOPK=partition \
  -- /work/main/.venv/bin/python service.py
