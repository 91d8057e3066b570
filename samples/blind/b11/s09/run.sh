#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --env SVC_LIFETIME=$((S + 20)) \
  --env-a SVC_EXECUTOR=thread --env-a SVC_WORKERS=4 --env-b SVC_EXECUTOR=process --env-b SVC_WORKERS=2 \
  -- /work/main/.venv/bin/python service.py
