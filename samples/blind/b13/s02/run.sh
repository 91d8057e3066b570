#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18802 --users 6 \
  --env SVC_LIFETIME=$L --env-a SVC_DRAFT_DECODE=0 --env-b SVC_DRAFT_DECODE=1 \
  -- /work/main/.venv/bin/python service.py
