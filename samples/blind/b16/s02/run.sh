#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
cd "$(dirname "$0")"
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18802 --users 4 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env-a SVC_JPEG_DRAFT=0 --env-b SVC_JPEG_DRAFT=1 \
  -- /work/main/.venv/bin/python service.py
