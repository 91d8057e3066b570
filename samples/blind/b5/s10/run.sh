#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18310 --users 6 \
  --env SVC_PORT=18310 --env SVC_INFER_WORKERS=4 \
  --env-a SVC_DECODE_WORKERS=1 --env-b SVC_DECODE_WORKERS=4 \
  -- /work/main/.venv/bin/python service.py
