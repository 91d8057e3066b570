#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) \
  --env-a SVC_POOL=per_job --env-b SVC_POOL=shared \
  -- /work/main/.venv/bin/python service.py
