#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$(( $2 + 30 )) \
  --load-env-a SVC_ARRIVAL_RATE=20 --load-env-b SVC_ARRIVAL_RATE=40 \
  -- /work/main/.venv/bin/python service.py
