#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18811 --users 4 \
  --load-env-a LOAD_RATE_PER_USER=2 --load-env-b LOAD_RATE_PER_USER=4 \
  -- timeout ${LIFE}s $P -m uvicorn service:app --host 127.0.0.1 --port 18811 --log-level warning
