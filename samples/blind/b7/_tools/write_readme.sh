#!/usr/bin/env bash
cd /work/blind/b7
{
cat <<'HDR'
# Batch b7: 12 small inference services with labelled bottlenecks

Each `sNN/` has `service.py` (variant switched only by `SVC_*` env vars, or the load generator's env for the
arrival-rate case), `run.sh a|b SECONDS` (execs `harness.py`), `label.toml` (label written before measuring;
verdict and result filled from `results/sNN.jsonl`), a `locustfile.py` for HTTP services or its own load
(stdin producer, in-process clients, broker child), and helper-child scripts where used.

Verification: `_tools/verify.sh 3 12 sNN` (A,B alternating, 3 rounds, fresh start each, 12 s window after warm-up).
Kept if median(B)/median(A) throughput >= 1.3 and every B run beats every A run (io: latency ~ downstream delay,
low CPU, B = faster downstream; idle: throughput = arrival rate, B = doubled arrival rate).
Host: 2 vCPUs shared with other work running at the same time (visible as spread in the ranges).
Throughput unit is requests/s, or for the no-port services items/s (s05), in-process requests/s (s10), jobs/s (s11, s12); CPU is cores used by
the service's whole process session (main + workers + helper children), not the load generator.

| id | stack | label | mixed? | counterfactual | measured A vs B | verdict |
|---|---|---|---|---|---|---|
HDR
/work/main/.venv/bin/python _tools/gen_readme.py
cat <<'FTR'

Notes
- Ports: s01 18511, s02 18521, s03 18531 (+ feature-store child 18532), s04 18541 (+ embedder child 18542), s06 18561,
  s07 18571, s08 18581 (+ cache child 18582), s09 18591, s12 broker child 18505. s05, s10, s11 listen on no port.
- Warm-up: the harness default (locust start 2 s + 5 s) is enough for all; every service starts in < 10 s
  (s06 builds a 120k x 256 index, s07 starts 2 uvicorn workers).
- s02's A variant leaves OpenBLAS at its default thread count (one per core) in each of 4 gunicorn workers; B pins 1.
  s06, s07, s10, s12 pin OPENBLAS_NUM_THREADS=1 in run.sh (environment, same for A and B).
- s05 latencies are per-item processing time (read from stdin to done); the producer keeps the pipe full.
- s09's variants differ only in the load generator's env (LOAD_RPS 20 vs 40); the service is identical.
- s12 was first verified with 2 consumer threads; under the neighbouring load the runs spread over 3x (A 63-213, B 177-887
  jobs/s) and every-B-beats-every-A failed, so the consumer was set to 1 thread (label unchanged) and re-verified;
  the first attempt is kept in `results/old/`.
- pip: nothing was installed; everything uses /work/main/.venv as provided.
FTR
} > README.md
