#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_LIFETIME=$((${S%.*} + 40)) \
  --env-a SVC_REFRESH_NICE=0 --env-b SVC_REFRESH_NICE=19 \
  -- /work/main/.venv/bin/python service.py
