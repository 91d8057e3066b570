#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18858 --users 4 \
  --env SVC_PORT=18858 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_REUSE_BUFFER=0 --env-b SVC_REUSE_BUFFER=1 \
  -- /work/main/.venv/bin/python service.py
