#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18803 --users 4 \
  --env SVC_PORT=18803 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_F32=0 --env-a SVC_PARTIAL=0 --env-b SVC_F32=1 --env-b SVC_PARTIAL=1 \
  -- /work/main/.venv/bin/python service.py
