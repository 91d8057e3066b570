#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --mode pipe --producer producer.py \
  --env SVC_MAX_LEN=96 --load-env-a LOAD_RATE=5 --load-env-b LOAD_RATE=10 \
  -- /work/main/.venv/bin/python service.py
