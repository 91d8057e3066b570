#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18854 --users 8 \
  --env SVC_PORT=18854 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) --env SVC_POOL=4 \
  --env-a SVC_INTRA_THREADS=8 --env-b SVC_INTRA_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
