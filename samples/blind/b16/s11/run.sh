#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode self --warmup 6 \
  --env SVC_LIFETIME=$(( $2 + 20 )) --env-a SVC_NPROBE=16 --env-b SVC_NPROBE=4 \
  -- /work/main/.venv/bin/python service.py
