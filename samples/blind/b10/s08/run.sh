#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 30 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18808 --users 8 \
  --env-a SVC_WORKERS=1 --env-a SVC_THREADS=8 --env-b SVC_WORKERS=4 --env-b SVC_THREADS=2 \
  -- /work/main/.venv/bin/python service.py
