#!/usr/bin/env bash
# processes ids appended to _tools/queue.txt, one at a time
cd /work/blind/b21
touch _tools/queue.txt _tools/done.txt
while true; do
  next=$(comm -23 <(sort _tools/queue.txt) <(sort _tools/done.txt) | head -1)
  if [ -z "$next" ]; then
    [ -f _tools/queue.stop ] && exit 0
    sleep 3; continue
  fi
  echo "$(date -u +%T) start $next" >> _tools/queue.log
  _tools/verify.sh 3 12 $next
  echo $next >> _tools/done.txt
  echo "$(date -u +%T) done $next" >> _tools/queue.log
done
