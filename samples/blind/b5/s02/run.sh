#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18302 --users 8 \
  --env SVC_PORT=18302 --env SVC_THREADS=8 --env-a SVC_ORT_THREADS=16 --env-b SVC_ORT_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
