#!/usr/bin/env bash
cd "$(dirname "$0")"
P=/work/main/.venv/bin/python
LIFE=$(( ${2%.*} + 40 ))
exec $P harness.py "$1" "$2" --port 18804 --users 8 \
  --env-a SVC_BLAS_THREADS=8 --env-b SVC_BLAS_THREADS=1 \
  -- timeout ${LIFE}s $P service.py
