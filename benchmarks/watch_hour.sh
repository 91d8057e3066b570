#!/usr/bin/env bash
# One hour of diagnose watch on a live sample (docs/performance.md, section 6): every 30 s
# its RSS, peak RSS, anonymous and file-backed memory, open descriptors, and the CPU time of
# its whole tree (its own and its reaped helpers').
# Usage: [OUT=/tmp/watch-hour EVERY=60s COUNT=60] benchmarks/watch_hour.sh (as root, from a checkout with .venv)
set -u
cd "$(dirname "$0")/.."
source .venv/bin/activate
out=${OUT:-/tmp/watch-hour}; mkdir -p "$out"
rm -rf $out/store; : > $out/rss.txt
python samples/io_wait.py --threads 8 --seconds "${TARGET_S:-4000}" --quiet & target=$!
sleep 3
diagnose watch $target --every "${EVERY:-60s}" --capture 10s --count "${COUNT:-60}" --store $out/store > $out/watch.log 2>&1 & w=$!
tck=$(getconf CLK_TCK)
echo "# t_s rss_kib hwm_kib cpu_s(self+reaped children) anon_kib pss_file_kib fds" >> $out/rss.txt
t0=$(date +%s)
while kill -0 $w 2>/dev/null; do
  st=$(cat /proc/$w/stat 2>/dev/null) || break
  rss=$(awk '/VmRSS/{print $2}' /proc/$w/status); hwm=$(awk '/VmHWM/{print $2}' /proc/$w/status)
  cpu=$(echo "$st" | sed 's/.*) //' | awk -v t=$tck '{print ($12+$13+$14+$15)/t}')
  anon=$(awk '/^Anonymous/{print $2}' /proc/$w/smaps_rollup); file=$(awk '/^Pss_File/{print $2}' /proc/$w/smaps_rollup)
  fds=$(ls /proc/$w/fd | wc -l)
  echo "$(( $(date +%s) - t0 )) $rss $hwm $cpu $anon $file $fds" >> $out/rss.txt
  sleep 30
done
wait $w; echo "watch rc=$?" >> $out/rss.txt
kill $target 2>/dev/null
