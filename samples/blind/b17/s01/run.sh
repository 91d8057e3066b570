#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18801 --users 8 \
  --env SVC_PORT=18801 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_TOKENIZER=python --env-b SVC_TOKENIZER=fast \
  -- /work/main/.venv/bin/python service.py
