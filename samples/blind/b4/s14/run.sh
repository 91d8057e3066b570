#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18214 --users 4 --warmup 5 \
  --env-a SVC_RESIZE=lanczos --env-b SVC_RESIZE=draft \
  -- /work/main/.venv/bin/python -m uvicorn service:app --host 127.0.0.1 --port 18214 --log-level warning
