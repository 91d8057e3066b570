#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 25 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18809 --users 10 \
  --load-env-a SVC_ARRIVAL_RATE=20 --load-env-b SVC_ARRIVAL_RATE=40 \
  -- /work/main/.venv/bin/python service.py
