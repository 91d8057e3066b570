#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18631 --users 8 --env SVC_LIFETIME=$((S+60)) --env SVC_PORT=18631 \
  --env SVC_WORKERS=1 --env SVC_THREADS=8 --env-a SVC_REFRESH=thread --env-b SVC_REFRESH=process \
  -- /work/main/.venv/bin/gunicorn -c gunicorn.conf.py service:app
