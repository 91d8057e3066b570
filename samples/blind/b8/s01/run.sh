#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18611 --users 8 --env SVC_LIFETIME=$((S+60)) --env SVC_PORT=18611 \
  --env-a SVC_FEATURES=full --env-b SVC_FEATURES=words -- /work/main/.venv/bin/python service.py
