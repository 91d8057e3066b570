#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --port 18809 --users 4 \
  --env SVC_PORT=18809 --env SVC_LIFETIME=$(( ${S%.*} + 40 )) \
  --env-a SVC_BUFFERS=per_request --env-b SVC_BUFFERS=reuse \
  -- /work/main/.venv/bin/python service.py
