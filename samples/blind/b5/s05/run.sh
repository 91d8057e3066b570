#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode self \
  --env SVC_WORKERS=2 --env SVC_CLIENTS=4 --env SVC_SEQ=128 \
  --env-a SVC_LAYERS=6 --env-a SVC_HIDDEN=512 --env-a SVC_HEADS=8 --env-a SVC_FFN=2048 \
  --env-b SVC_LAYERS=3 --env-b SVC_HIDDEN=256 --env-b SVC_HEADS=4 --env-b SVC_FFN=1024 \
  -- /work/main/.venv/bin/python service.py
