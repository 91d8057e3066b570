#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_REUSE_GRID=0 --env-b SVC_REUSE_GRID=1 \
  -- /work/main/.venv/bin/python service.py
