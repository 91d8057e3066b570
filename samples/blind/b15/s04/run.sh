#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --port 18804 --users 8 \
  --env SVC_LIFETIME=$((${S%.*}+40)) \
  --env-b SVC_ORT_THREADS=1 \
  -- /work/main/.venv/bin/python service.py
