#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18651 --users 8 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_BLAS_THREADS=4 --env-b SVC_BLAS_THREADS=1 \
  -- /work/main/.venv/bin/uvicorn service:app --host 127.0.0.1 --port 18651 --workers 4 --log-level warning --no-access-log
