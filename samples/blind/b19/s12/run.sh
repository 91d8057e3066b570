#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_CLIENTS=6 --env SVC_WORKERS=4 \
  --env-a SVC_PER_THREAD_SESSION=0 --env-b SVC_PER_THREAD_SESSION=1 \
  -- /work/main/.venv/bin/python service.py
