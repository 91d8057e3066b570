#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 40 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode self --env-b SVC_INTRA_THREADS=1 -- /work/main/.venv/bin/python service.py
