#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18801 --users 8 \
  --env-a SVC_JPEG_DRAFT=0 --env-b SVC_JPEG_DRAFT=1 \
  -- timeout ${LIFE}s $P -m uvicorn service:app --host 127.0.0.1 --port 18801 --log-level warning
