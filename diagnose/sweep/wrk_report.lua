-- Added by diagnose sweep to a wrk command without a script of its own (wrk -s FILE):
-- at the end wrk calls done(), which prints one line with every figure the sweep reads,
-- P95 included (wrk's own --latency summary has 50/75/90/99 only). Latencies are in
-- microseconds inside wrk; the line gives milliseconds.
done = function(summary, latency, requests)
  local e = summary.errors
  local socket_errors = e.connect + e.read + e.write + e.timeout
  io.write(string.format(
    'diagnose-load: {"tool": "wrk", "seconds": %.6f, "requests": %d, "failures": %d, ' ..
    '"status_errors": %d, "connect_errors": %d, "read_errors": %d, "write_errors": %d, ' ..
    '"timeouts": %d, "mean_ms": %.3f, "max_ms": %.3f, "p50_ms": %.3f, "p95_ms": %.3f, ' ..
    '"p99_ms": %.3f}\n',
    summary.duration / 1e6, summary.requests + socket_errors, e.status + socket_errors,
    e.status, e.connect, e.read, e.write, e.timeout,
    latency.mean / 1000, latency.max / 1000, latency:percentile(50) / 1000,
    latency:percentile(95) / 1000, latency:percentile(99) / 1000))
end
