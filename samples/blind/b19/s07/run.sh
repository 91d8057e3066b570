#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18807 --users 8 \
  --env SVC_PORT=18807 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_INTRA_THREADS=8 --env-b SVC_INTRA_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
