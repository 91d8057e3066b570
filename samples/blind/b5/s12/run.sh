#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18312 --users 6 \
  --env SVC_PORT=18312 --env SVC_WORKERS=2 --env SVC_K=8 --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_REFERENCE=full --env-b SVC_REFERENCE=codebook \
  -- /work/main/.venv/bin/python service.py
