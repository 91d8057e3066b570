#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18208 --users 4 --warmup 5 \
  --env-a SVC_PRICING_DELAY_MS=60 --env-b SVC_PRICING_DELAY_MS=15 \
  -- /work/main/.venv/bin/python -m uvicorn service:app --host 127.0.0.1 --port 18208 --log-level warning
