#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18211 --users 4 --warmup 5 \
  --env-a SVC_COLOR_FEATURES=pixels --env-b SVC_COLOR_FEATURES=native \
  -- /work/main/.venv/bin/python -m gunicorn -c gunicorn.conf.py service:app
