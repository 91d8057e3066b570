#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18860 --users 4 \
  --env SVC_PORT=18860 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --load-env-a LOAD_RATE_PER_USER=3 --load-env-b LOAD_RATE_PER_USER=6 \
  -- /work/main/.venv/bin/python service.py
