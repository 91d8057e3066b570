#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18810 --users 4 \
  --env SVC_LIFETIME=$((S + 40)) \
  --env-a SVC_SELECT=sort --env-b SVC_SELECT=partition \
  -- /work/main/.venv/bin/python service.py
