#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18704 --users 6 --env SVC_PORT=18704 \
  --env-a SVC_CANDIDATES=60000 --env-b SVC_CANDIDATES=20000 -- /work/main/.venv/bin/python service.py
