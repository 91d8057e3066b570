#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18216 --users 6 --warmup 5 \
  --env-a SVC_SHADOW_WORKERS=2 --env-b SVC_SHADOW_WORKERS=0 \
  -- /work/main/.venv/bin/python -m gunicorn -c gunicorn.conf.py service:app
