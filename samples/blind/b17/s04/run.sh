#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18804 --users 6 \
  --env SVC_PORT=18804 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --load-env-a LOAD_RATE_PER_USER=2 --load-env-b LOAD_RATE_PER_USER=4 \
  -- /work/main/.venv/bin/python service.py
