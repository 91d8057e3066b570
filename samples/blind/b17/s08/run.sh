#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18808 --users 8 \
  --env SVC_PORT=18808 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_RANKING=sort --env-b SVC_RANKING=partition \
  -- /work/main/.venv/bin/python service.py
