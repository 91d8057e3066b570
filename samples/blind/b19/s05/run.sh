#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18805 --users 2 \
  --env SVC_PORT=18805 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --load-env-a LOAD_RATE=6 --load-env-b LOAD_RATE=12 \
  -- /work/main/.venv/bin/python service.py
