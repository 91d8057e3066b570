#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 40 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18801 --users 8 --env-b SVC_DECODE=draft -- /work/main/.venv/bin/python service.py
