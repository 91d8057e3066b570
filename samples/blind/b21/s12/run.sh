#!/usr/bin/env bash
cd "$(dirname "$0")"
V=${1:-a}; S=${2:-12}
export SVC_LIFETIME=$(( ${S%.*} + 40 ))
exec /work/main/.venv/bin/python harness.py "$V" "$S" --mode pipe --producer producer.py --load-env-a LOAD_RATE=20 --load-env-b LOAD_RATE=40 -- /work/main/.venv/bin/python service.py
