#!/usr/bin/env bash
cd "$(dirname "$0")"
S=$2
export SVC_LIFETIME=$(( ${S%.*} + 30 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18803 --users 8 \
  --env SVC_WORKERS=4 --env SVC_TORCH_THREADS=1 --env-a SVC_DEPTH=8 --env-b SVC_DEPTH=2 \
  -- /work/main/.venv/bin/python service.py
