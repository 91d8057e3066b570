#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 30 ))
exec $P harness.py "$1" "$2" --mode self --env SVC_LIFETIME=$LIFE \
  --env-a SVC_REUSE_BUFFERS=0 --env-b SVC_REUSE_BUFFERS=1 \
  -- $P service.py
