#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 50 ))
exec $P harness.py "$1" "$2" --port 18808 --users 8 --warmup 8 \
  --env-a SVC_ENCODER_LAYERS=8 --env-b SVC_ENCODER_LAYERS=2 \
  -- timeout ${LIFE}s $P -m uvicorn service:app --host 127.0.0.1 --port 18808 --workers 2 --log-level warning
