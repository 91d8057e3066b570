#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --mode self \
  --env SVC_LIFETIME=$((${S%.*}+40)) --env OMP_NUM_THREADS=1 --env OPENBLAS_NUM_THREADS=1 --env MKL_NUM_THREADS=1 \
  --env-b SVC_PARTIAL_SELECT=1 \
  -- /work/main/.venv/bin/python service.py
