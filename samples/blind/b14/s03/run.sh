#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
G=/work/main/.venv/bin/gunicorn
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18803 --users 8 \
  --env-a SVC_DISTANCE=direct --env-b SVC_DISTANCE=gemm \
  -- timeout ${LIFE}s $G -w 2 -k gthread --threads 4 -b 127.0.0.1:18803 --log-level warning service:app
