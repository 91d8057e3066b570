#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18402 --users 8 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_INTRA_OP=8 --env-b SVC_INTRA_OP=1 -- /work/main/.venv/bin/python service.py
