#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
G=/work/main/.venv/bin/gunicorn
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18805 --users 8 \
  --env-a SVC_POOL=request --env-b SVC_POOL=shared \
  -- timeout ${LIFE}s $G -w 2 -k sync -b 127.0.0.1:18805 --timeout 60 --log-level warning service:app
