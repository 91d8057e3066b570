#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18407 --users 4 --warmup 10 --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_SEARCH=flat --env-b SVC_SEARCH=ivf -- /work/main/.venv/bin/python service.py
