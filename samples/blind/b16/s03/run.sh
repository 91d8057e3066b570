#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18803 --users 4 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env-a SVC_TOPK=sort --env-b SVC_TOPK=partition \
  -- /work/main/.venv/bin/python service.py
