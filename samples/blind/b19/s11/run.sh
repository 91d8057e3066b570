#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$1" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$(( ${S%.*} + 30 )) \
  --env-a SVC_PARSERS=1 --env-b SVC_PARSERS=3 \
  -- /work/main/.venv/bin/python service.py
