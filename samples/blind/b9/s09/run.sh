#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --load-env-a EVENTS_PER_S=20 --load-env-b EVENTS_PER_S=40 -- /work/main/.venv/bin/python service.py
