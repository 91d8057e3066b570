#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$L --load-env-a EVENTS_PER_S=20 --load-env-b EVENTS_PER_S=40 \
  -- /work/main/.venv/bin/python service.py
