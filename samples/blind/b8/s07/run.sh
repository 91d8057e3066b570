#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18671 --users 8 --env SVC_LIFETIME=$((S+60)) --env SVC_PORT=18671 \
  --env-a SVC_MODEL=base --env-b SVC_MODEL=small -- /work/main/.venv/bin/python service.py
