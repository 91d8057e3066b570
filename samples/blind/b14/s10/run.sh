#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18810 --users 4 \
  --env-a INVENTORY_DELAY_MS=80 --env-b INVENTORY_DELAY_MS=20 \
  -- timeout ${LIFE}s $P service.py
