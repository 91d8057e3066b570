#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18621 --users 8 --env SVC_LIFETIME=$((S+60)) --env SVC_PORT=18621 --env SVC_FS_PORT=18622 \
  --env-a SVC_FS_CONNS=1 --env-b SVC_FS_CONNS=8 -- /work/main/.venv/bin/python service.py
