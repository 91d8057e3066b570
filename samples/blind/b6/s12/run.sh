#!/usr/bin/env bash
cd "$(dirname "$0")"
V=$1; S=${2:-12}
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self --env SVC_LIFETIME=$((S+60)) \
  --env BROKER_PORT=18462 --env-a SVC_PCA=svd --env-b SVC_PCA=eigh -- /work/main/.venv/bin/python service.py
