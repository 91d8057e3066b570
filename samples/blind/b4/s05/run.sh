#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18205 --users 4 --warmup 5 \
  --env-a SVC_PRECISION=double --env-b SVC_PRECISION=single \
  -- /work/main/.venv/bin/python -m gunicorn -c gunicorn.conf.py service:app
