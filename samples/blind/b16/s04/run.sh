#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode self \
  --env SVC_LIFETIME=$(( $2 + 20 )) --env SVC_CLIENTS=8 --env SVC_STORE_PORT=18804 \
  --env-a SVC_SHARED_CONN=1 --env-b SVC_SHARED_CONN=0 \
  -- /work/main/.venv/bin/python service.py
