#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18807 --users 4 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env NUMPY_MADVISE_HUGEPAGE=0 --env-a SVC_WORKSPACE=request --env-b SVC_WORKSPACE=thread \
  -- /work/main/.venv/bin/python service.py
