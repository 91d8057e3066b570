#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18751 --users 8 --warmup 12 --env SVC_PORT=18751 \
  --env-a SVC_LAYERS=8 --env-b SVC_LAYERS=3 -- /work/main/.venv/bin/python service.py
