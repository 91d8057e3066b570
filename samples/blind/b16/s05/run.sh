#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18805 --users 8 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env-a SVC_INTRA_OP_THREADS=8 --env-b SVC_INTRA_OP_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
