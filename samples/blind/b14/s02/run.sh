#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18802 --users 8 \
  --env-a SVC_STORE_CONNECTIONS=1 --env-b SVC_STORE_CONNECTIONS=8 \
  -- timeout ${LIFE}s $P service.py
