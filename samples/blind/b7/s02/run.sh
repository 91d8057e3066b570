#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18521 --users 8 --env SVC_PORT=18521 --env SVC_LIFETIME=$((S+60)) \
  --env-b SVC_BLAS_THREADS=1 -- /work/main/.venv/bin/python service.py
