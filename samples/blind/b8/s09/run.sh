#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --env SVC_LIFETIME=$((S+60)) \
  --load-env-a RATE=20 --load-env-b RATE=40 -- /work/main/.venv/bin/python service.py
