#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode pipe --warmup 5 \
  --load-env-a LOAD_RATE=5 --load-env-b LOAD_RATE=20 \
  -- /work/main/.venv/bin/python service.py
