#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py $V $S --port 18811 --users 8 \
  --env SVC_LIFETIME=$((${S%.*}+40)) \
  --env-a SVC_WORKERS=1 --env-a SVC_THREADS=8 --env-b SVC_WORKERS=2 --env-b SVC_THREADS=4 \
  -- /work/main/.venv/bin/python service.py
