#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 40 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18811 --users 8 --env-a SVC_PRICING_DELAY_MS=80 --env-b SVC_PRICING_DELAY_MS=30 -- /work/main/.venv/bin/python service.py
