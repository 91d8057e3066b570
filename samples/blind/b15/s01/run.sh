#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --port 18801 --users 8 \
  --env SVC_LIFETIME=$((${S%.*}+40)) --env OMP_NUM_THREADS=1 --env MKL_NUM_THREADS=1 --env OPENBLAS_NUM_THREADS=1 \
  --env-b SVC_HIDDEN=1024 \
  -- /work/main/.venv/bin/python service.py
