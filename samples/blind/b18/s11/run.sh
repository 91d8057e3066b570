#!/usr/bin/env bash
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode self \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) --env SVC_CLIENTS=4 --env SVC_POOL=2 \
  --env-a SVC_TOPK=sort --env-b SVC_TOPK=partition \
  -- /work/main/.venv/bin/python service.py
