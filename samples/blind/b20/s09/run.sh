#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --load-env-a EVENT_RATE=20 --load-env-b EVENT_RATE=40 \
  -- /work/main/.venv/bin/python service.py
