#!/usr/bin/env bash
# waits for queue.sh (pid $1) to finish, then verifies the remaining ids in groups
cd /work/blind/b17
while kill -0 $1 2>/dev/null; do sleep 2; done
for g in "s05 s06 s08" "s12 s07 s09" "s10 s11"; do
  echo "$(date -u +%T) start $g" >> _tools/queue.log
  _tools/verify.sh 3 12 $g
  echo "$(date -u +%T) done $g" >> _tools/queue.log
done
