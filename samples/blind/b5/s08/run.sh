#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18308 --users 6 \
  --env SVC_PORT=18308 --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_PARALLEL=1 --env-b SVC_PARALLEL=0 \
  -- /work/main/.venv/bin/python service.py
