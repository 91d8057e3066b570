#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18213 --users 8 --warmup 5 \
  --env-a SVC_PARALLELISM=16 --env-b SVC_PARALLELISM=1 \
  -- /work/main/.venv/bin/python -m gunicorn -c gunicorn.conf.py service:app
