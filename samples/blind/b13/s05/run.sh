#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
L=$(( ${S%.*} + 45 ))
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$L --env SVC_EXEC_THREADS=4 --env SVC_INFLIGHT=8 \
  --env-a SVC_ORT_THREADS=8 --env-b SVC_ORT_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
