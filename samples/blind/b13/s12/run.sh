#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$L --env SVC_INFLIGHT=24 \
  --env-a SVC_PARSERS=1 --env-b SVC_PARSERS=2 \
  -- /work/main/.venv/bin/python service.py
