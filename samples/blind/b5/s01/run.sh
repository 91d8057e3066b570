#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18301 --users 6 \
  --env SVC_PORT=18301 --env-a SVC_TOKENIZER=python --env-b SVC_TOKENIZER=fast \
  -- /work/main/.venv/bin/python service.py
