#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18306 --users 6 \
  --env SVC_PORT=18306 --env SVC_MAX_FRAMES=8192 --env OPENBLAS_NUM_THREADS=1 --env NUMPY_MADVISE_HUGEPAGE=0 \
  --env-a SVC_REUSE=0 --env-b SVC_REUSE=1 \
  -- /work/main/.venv/bin/python service.py
