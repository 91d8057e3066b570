#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --port 18808 --users 4 \
  --env SVC_LIFETIME=$((${S%.*}+40)) --env OPENBLAS_NUM_THREADS=1 \
  --load-env-a LOAD_RATE_PER_USER=1.0 --load-env-b LOAD_RATE_PER_USER=2.0 \
  -- /work/main/.venv/bin/python service.py
