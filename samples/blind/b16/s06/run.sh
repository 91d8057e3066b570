#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18806 --users 6 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env SVC_PORT=18806 --env-a SVC_POOL=request --env-b SVC_POOL=shared \
  -- /work/main/.venv/bin/gunicorn -c gunicorn_conf.py service:app
