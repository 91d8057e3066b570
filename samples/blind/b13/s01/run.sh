#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18801 --users 4 \
  --env SVC_LIFETIME=$L --env-a SVC_LAYERS=8 --env-b SVC_LAYERS=3 \
  -- /work/main/.venv/bin/python service.py
