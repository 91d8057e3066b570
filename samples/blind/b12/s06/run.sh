#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18806 --users 4 \
  --load-env-a LOAD_RATE_PER_USER=2 --load-env-b LOAD_RATE_PER_USER=4 \
  -- /work/main/.venv/bin/python service.py
