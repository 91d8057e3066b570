#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 30 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18807 --users 4 \
  --env-a SVC_REUSE_BUFFERS=0 --env-b SVC_REUSE_BUFFERS=1 \
  -- /work/main/.venv/bin/python service.py
