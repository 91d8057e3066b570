#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18581 --users 8 --env SVC_PORT=18581 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_MONITOR=thread --env-b SVC_MONITOR=process -- /work/main/.venv/bin/python service.py
