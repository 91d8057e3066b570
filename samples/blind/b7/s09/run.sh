#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18591 --users 4 --env SVC_PORT=18591 --env SVC_LIFETIME=$((S+60)) \
  --load-env-a LOAD_USERS=4 --load-env-a LOAD_RPS=20 --load-env-b LOAD_USERS=4 --load-env-b LOAD_RPS=40 \
  -- /work/main/.venv/bin/python service.py
