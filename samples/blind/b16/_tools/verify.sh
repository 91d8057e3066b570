#!/usr/bin/env bash
# usage: verify.sh ROUNDS SECONDS id...   -> appends JSON lines to results/<id>.jsonl
R=$1; S=$2; shift 2
cd /work/blind/b16
for id in "$@"; do
  for r in $(seq 1 $R); do
    for v in a b; do
      out=$(./$id/run.sh $v $S 2>>results/$id.err | tail -1)
      echo "{\"id\":\"$id\",\"round\":$r,\"at\":\"$(date -u +%H:%M:%S)\",\"res\":$out}" >> results/$id.jsonl
    done
  done
done
