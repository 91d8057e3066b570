#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --env SVC_WORKERS=2 --env-a SVC_FEATURES_IN=reader --env-b SVC_FEATURES_IN=workers \
  -- /work/main/.venv/bin/python service.py
