#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_LIFETIME=$((S + 20)) --env SVC_WORKERS=2 \
  --env-a SVC_LAYOUT=rows --env-b SVC_LAYOUT=columns \
  -- /work/main/.venv/bin/python service.py
