#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --port 18807 --users 4 \
  --env SVC_LIFETIME=$((${S%.*}+40)) --env OPENBLAS_NUM_THREADS=1 \
  --env-a SVC_STORE_DELAY_MS=40 --env-b SVC_STORE_DELAY_MS=10 \
  -- /work/main/.venv/bin/python service.py
