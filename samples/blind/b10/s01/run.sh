#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 30 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18801 --users 6 \
  --env-a SVC_DECODE=full --env-b SVC_DECODE=draft \
  -- /work/main/.venv/bin/python service.py
