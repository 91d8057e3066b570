#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode pipe --producer producer.py \
  --env SVC_THREADS=2 --env SVC_ITEMS=1000000 --env SVC_CANDIDATES=400000 --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_LAYOUT=catalog --env-b SVC_LAYOUT=ranked \
  -- /work/main/.venv/bin/python service.py
