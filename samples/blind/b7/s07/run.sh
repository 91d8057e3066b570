#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18571 --users 6 --env SVC_PORT=18571 --env SVC_LIFETIME=$((S+60)) \
  --env OPENBLAS_NUM_THREADS=1 --env-a SVC_BATCH_REUSE=0 --env-b SVC_BATCH_REUSE=1 -- /work/main/.venv/bin/python service.py
