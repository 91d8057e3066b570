#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode self --warmup 5 \
  --env-a SVC_MONITOR_IMPL=python --env-b SVC_MONITOR_IMPL=numpy \
  -- /work/main/.venv/bin/python service.py
