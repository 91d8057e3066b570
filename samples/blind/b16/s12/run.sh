#!/usr/bin/env bash
# usage: run.sh a|b SECONDS
# Variant a runs next to a co-located batch job (batch_job.py, SVC_NEIGHBOUR_PROCS busy processes in
# their own session, not part of the service); variant b runs alone. The service itself is identical.
cd "$(dirname "$0")"
if [ "$1" = a ]; then export SVC_NEIGHBOUR_PROCS=8; else export SVC_NEIGHBOUR_PROCS=0; fi
if [ "$SVC_NEIGHBOUR_PROCS" -gt 0 ]; then
  OPENBLAS_NUM_THREADS=1 setsid /work/main/.venv/bin/python batch_job.py $(( $2 + 30 )) < /dev/null > /dev/null 2>&1 &
fi
exec /work/main/.venv/bin/python harness.py "$1" "$2" --port 18812 --users 8 --warmup 15 \
  --env SVC_LIFETIME=$(( $2 + 40 )) --env SVC_PORT=18812 \
  -- /work/main/.venv/bin/gunicorn -c gunicorn_conf.py service:app
