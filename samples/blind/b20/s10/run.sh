#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self \
  --env SVC_LIFETIME=$((${S%.*} + 40)) --env SVC_WORKERS=4 \
  --env-a SVC_EXECUTOR=thread --env-b SVC_EXECUTOR=process \
  -- /work/main/.venv/bin/python service.py
