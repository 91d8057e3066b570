#!/usr/bin/env bash
cd /work/blind/b6
{
cat <<'HDR'
# Batch b6: 12 small inference services with labelled bottlenecks

Each `sNN/` has `service.py` (variant switched only by `SVC_*` env vars, or the load generator's env for the
arrival-rate case), `run.sh a|b SECONDS` (execs `harness.py`), `label.toml` (label written before measuring;
verdict and result filled from `results/sNN.jsonl`), a `locustfile.py` for HTTP services or its own load
(stdin producer, in-process clients, uploader child, broker child), and helper-child scripts where used.

Verification: `_tools/verify.sh 3 12 sNN` (A,B alternating, 3 rounds, fresh start each, 12 s window after warm-up).
Kept if median(B)/median(A) throughput >= 1.3 and every B run beats every A run (io: latency ~ downstream delay,
low CPU, B = faster downstream; idle: throughput = arrival rate, B = doubled arrival rate).
Host: 2 vCPUs shared with another job running test suites at the same time (visible as spread in the ranges).
Throughput unit is requests/s, or for the no-port services items/s (s05), in-process requests/s (s10), jobs/s (s11, s12); CPU is cores used by
the service's whole process session (main + workers + helper children), not the load generator.

| id | stack | label | mixed? | counterfactual | measured A vs B | verdict |
|---|---|---|---|---|---|---|
HDR
/work/main/.venv/bin/python _tools/gen_readme.py
cat <<'FTR'

Notes
- s05 was first verified with torch using 2 intra-op threads; under the neighbour's load the runs were erratic
  (B ranged 43-415 items/s), so the consumer was set to 1 intra-op thread (label unchanged) and re-verified;
  the first attempt is kept in `results/old/`.
- s02/s12: OpenBLAS with its default 2 threads behaves very badly when the neighbour job takes a core; s12 pins
  OPENBLAS_NUM_THREADS=1 for that reason (s02's A variant is exactly that oversubscription).
- s05 latencies are dominated by the pipe backlog (the producer keeps the stdin pipe full); use throughput.
- s07 uses `--warmup 10` (each uvicorn worker builds a 307 MB index at start-up).
FTR
} > README.md
