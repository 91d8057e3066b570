#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18204 --users 6 --warmup 5 \
  --env-a SVC_MODEL_SIZE=base --env-b SVC_MODEL_SIZE=small \
  -- /work/main/.venv/bin/python -m uvicorn service:app --host 127.0.0.1 --port 18204 --workers 2 --log-level warning
