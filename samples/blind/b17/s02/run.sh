#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18802 --users 16 \
  --env SVC_PORT=18802 --env SVC_STORE_PORT=18892 --env SVC_STORE_DELAY_MS=6 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_CONNECTIONS=shared --env-b SVC_CONNECTIONS=per_thread \
  -- /work/main/.venv/bin/python service.py
