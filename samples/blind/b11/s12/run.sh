#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18812 --users 4 \
  --env SVC_LIFETIME=$((S + 40)) --env REINDEX_JOBS=6 \
  --env-a REINDEX_NICE= --env-b REINDEX_NICE=19 \
  -- /work/main/.venv/bin/python service.py
