#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py --env SVC_LIFETIME=$((S+60)) \
  --env-a SVC_ENCODER_LAYERS=6 --env-b SVC_ENCODER_LAYERS=2 -- /work/main/.venv/bin/python service.py
