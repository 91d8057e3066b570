#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_WORKERS=4 --env SVC_CLIENTS=8 --env PYTHONHASHSEED=0 \
  --env-a SVC_EXECUTOR=thread --env-b SVC_EXECUTOR=process \
  -- /work/main/.venv/bin/python service.py
