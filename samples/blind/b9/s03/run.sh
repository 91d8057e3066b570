#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18731 --users 8 --env SVC_PORT=18731 \
  --env-a SVC_BLAS_THREADS=8 --env-b SVC_BLAS_THREADS=1 -- /work/main/.venv/bin/python service.py
