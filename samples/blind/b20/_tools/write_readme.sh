#!/usr/bin/env bash
cd /work/blind/b20
{
cat <<'HDR'
# Batch b20: 12 small inference services with labelled bottlenecks

Each `sNN/` has `service.py` (variant switched only by `SVC_*` env vars, or the load generator's env for the
arrival-rate case), `run.sh a|b SECONDS` (execs `harness.py`), `label.toml` (label written before measuring;
verdict and result filled from `results/sNN.jsonl`), a `locustfile.py` for HTTP services or its own load
(stdin producer, in-process clients), and helper-child scripts where used.

Verification: `_tools/verify.sh 3 12 sNN` (A,B alternating, 3 rounds, fresh start each, 12 s window after warm-up).
Kept if median(B)/median(A) throughput >= 1.3 and every B run beats every A run (io: latency ~ downstream delay,
low CPU, B = faster downstream; idle: throughput = arrival rate, B = doubled arrival rate).
Host: 2 vCPUs shared with other work running at the same time (visible as spread in the ranges).
Throughput unit is requests/s unless the notes say otherwise; CPU is cores used by
the service's whole process session (main + workers + helper children), not the load generator.

| id | stack | label | mixed? | counterfactual | measured A vs B | verdict |
|---|---|---|---|---|---|---|
HDR
/work/main/.venv/bin/python _tools/gen_readme.py
cat <<'FTR'

Notes
- (fill in: ports, lifetimes, warm-up, load, units, threads, anything the scorer must know)
FTR
} > README.md
