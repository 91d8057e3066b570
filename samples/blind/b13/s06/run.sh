#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18806 --users 6 \
  --env SVC_LIFETIME=$L --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_WORKER_POOL=0 --env-b SVC_WORKER_POOL=1 \
  -- /work/main/.venv/bin/python service.py
