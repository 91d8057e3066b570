#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18701 --users 8 --env SVC_PORT=18701 \
  --env-a SVC_SHARD_POOL=per_request --env-b SVC_SHARD_POOL=shared -- /work/main/.venv/bin/python service.py
