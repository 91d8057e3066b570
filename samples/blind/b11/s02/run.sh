#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18802 --users 6 \
  --env SVC_LIFETIME=$((S + 40)) --env-a SVC_DRAFT=0 --env-a SVC_RESAMPLE=lanczos \
  --env-b SVC_DRAFT=1 --env-b SVC_RESAMPLE=bilinear \
  -- /work/main/.venv/bin/python service.py
