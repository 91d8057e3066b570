#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_CLIENTS=4 --env SVC_WORKERS=2 \
  --env-a SVC_REUSE_BUFFERS=0 --env-b SVC_REUSE_BUFFERS=1 \
  -- /work/main/.venv/bin/python service.py
