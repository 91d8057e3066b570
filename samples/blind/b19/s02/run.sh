#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18802 --users 4 \
  --env SVC_PORT=18802 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_DRAFT=0 --env-b SVC_DRAFT=1 \
  -- /work/main/.venv/bin/python service.py
