#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18853 --users 6 \
  --env SVC_PORT=18853 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) --env SVC_THREADS=6 \
  --env-a SVC_NARROW_SECTION=0 --env-b SVC_NARROW_SECTION=1 \
  -- /work/main/.venv/bin/python service.py
