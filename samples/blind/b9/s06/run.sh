#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py \
  --env-a SVC_BUFFERS=fresh --env-b SVC_BUFFERS=reuse -- /work/main/.venv/bin/python service.py
