#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_CLIENTS=8 \
  --env-a SVC_EXECUTOR=thread --env-a SVC_WORKERS=8 \
  --env-b SVC_EXECUTOR=process --env-b SVC_WORKERS=2 \
  -- /work/main/.venv/bin/python service.py
