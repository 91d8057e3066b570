#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18711 --users 8 --env SVC_PORT=18711 \
  --env-a SVC_FEATURES=loop --env-b SVC_FEATURES=vector -- /work/main/.venv/bin/python service.py
