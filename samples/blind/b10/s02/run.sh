#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 30 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18802 --users 4 \
  --env-a SVC_LAYERS=8 --env-b SVC_LAYERS=2 \
  -- /work/main/.venv/bin/python service.py
