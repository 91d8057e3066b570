#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) \
  --env SVC_DECODERS=2 --env-a SVC_DECODE=full --env-b SVC_DECODE=draft \
  -- /work/main/.venv/bin/python service.py
