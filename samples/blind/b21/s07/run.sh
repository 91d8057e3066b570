#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 120 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18807 --users 8 --warmup 15 --env-b SVC_LAYERS=1 -- /work/main/.venv/bin/python service.py
