#!/usr/bin/env bash
# waits for the running verification (pid $1), then verifies the remaining ids in one call
cd /work/blind/b17
while kill -0 $1 2>/dev/null; do sleep 2; done
echo "$(date -u +%T) done s05 s06 s08" >> _tools/queue.log
echo "$(date -u +%T) start s12 s09 s07 s10 s11" >> _tools/queue.log
_tools/verify.sh 3 12 s12 s09 s07 s10 s11
echo "$(date -u +%T) done s12 s09 s07 s10 s11" >> _tools/queue.log
