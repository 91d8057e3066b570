#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18857 --users 6 --warmup 8 \
  --env SVC_PORT=18857 --env SVC_LIFETIME=$((${S%.*} + 50)) \
  --env-a SVC_NPROBE=0 --env-b SVC_NPROBE=4 \
  -- /work/main/.venv/bin/python service.py
