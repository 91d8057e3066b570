#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_WORKERS=4 --env SVC_CLIENTS=8 \
  --env-a SVC_INTRA_THREADS=4 --env-b SVC_INTRA_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
