#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self --env SVC_LIFETIME=$((S+60)) --env SVC_BROKER_PORT=18505 \
  --env OPENBLAS_NUM_THREADS=1 --env-a SVC_EINSUM_OPTIMIZE=0 --env-b SVC_EINSUM_OPTIMIZE=1 -- /work/main/.venv/bin/python service.py
