#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18409 --users 4 --env SVC_LIFETIME=$((S+60)) \
  --load-env-a ARRIVAL_PER_USER=5 --load-env-b ARRIVAL_PER_USER=10 -- /work/main/.venv/bin/python service.py
