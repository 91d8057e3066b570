#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18403 --users 8 --env SVC_LIFETIME=$((S+60)) \
  --env FS_PORT=18453 --env-a SVC_FS_POOL=1 --env-b SVC_FS_POOL=8 -- /work/main/.venv/bin/python service.py
