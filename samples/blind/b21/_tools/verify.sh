#!/usr/bin/env bash
# usage: verify.sh ROUNDS SECONDS id...   -> appends JSON lines to results/<id>.jsonl
# one verification on the host at a time, whichever batch asks (/work/blind/verify.lock),
# taken per service so that two batches' queues take turns
R=$1; S=$2; shift 2
cd /work/blind/b21
for id in "$@"; do
  (
  flock 9
  for r in $(seq 1 $R); do
    for v in a b; do
      out=$(./$id/run.sh $v $S 2>>results/$id.err | tail -1)
      echo "{\"id\":\"$id\",\"round\":$r,\"at\":\"$(date -u +%H:%M:%S)\",\"res\":$out}" >> results/$id.jsonl
    done
  done
  ) 9>/work/blind/verify.lock
done
