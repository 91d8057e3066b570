#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 30 ))
exec $P harness.py "$1" "$2" --mode pipe --producer producer.py --env SVC_LIFETIME=$LIFE \
  --env-a SVC_ORT_THREADS=8 --env-b SVC_ORT_THREADS=1 \
  -- $P service.py
