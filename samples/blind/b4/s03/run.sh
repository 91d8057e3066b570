#!/usr/bin/env bash
# usage: ./run.sh a|b SECONDS
cd "$(dirname "$0")" || exit 1
exec /work/main/.venv/bin/python harness.py "${1:-a}" "${2:-15}" --mode pipe --warmup 5 \
  --env-a SVC_TOKENIZER=python --env-b SVC_TOKENIZER=rust \
  -- /work/main/.venv/bin/python service.py
