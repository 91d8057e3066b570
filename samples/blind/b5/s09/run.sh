#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode self \
  --env SVC_CLIENTS=4 --env SVC_POOL=4 --env SVC_STATS_WINDOW=200000 \
  --env-a SVC_STATS_REFRESH_S=0 --env-b SVC_STATS_REFRESH_S=2 \
  -- /work/main/.venv/bin/python service.py
