#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18808 --users 4 \
  --env SVC_LIFETIME=$L --env-a SVC_REUSE_BUFFERS=0 --env-b SVC_REUSE_BUFFERS=1 \
  -- /work/main/.venv/bin/python service.py
