#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode locust --port 18201 --users 8 --warmup 5 \
  --env-a SVC_INTRA_OP_THREADS=4 --env-b SVC_INTRA_OP_THREADS=1 \
  -- /work/main/.venv/bin/python -m uvicorn service:app --host 127.0.0.1 --port 18201 --workers 3 --log-level warning
