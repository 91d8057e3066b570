#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 25 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --port 18803 --users 8 --env-b SVC_REINDEX_PROCS=0 -- /work/main/.venv/bin/python service.py
