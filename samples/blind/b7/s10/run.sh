#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self --env SVC_LIFETIME=$((S+60)) --env SVC_CLIENTS=4 \
  --env OPENBLAS_NUM_THREADS=1 --env-a SVC_POOL=per_request --env-b SVC_POOL=shared -- /work/main/.venv/bin/python service.py
