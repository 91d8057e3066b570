#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode locust --port 18803 --users 8 \
  --env SVC_LIFETIME=$L --env SVC_CACHE_DELAY_MS=6 \
  --env-a SVC_PER_THREAD_CONN=0 --env-b SVC_PER_THREAD_CONN=1 \
  -- /work/main/.venv/bin/python service.py
