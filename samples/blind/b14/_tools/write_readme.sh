#!/usr/bin/env bash
cd /work/blind/b14
{
cat <<'HDR'
# Batch b14: 12 small inference services with labelled bottlenecks

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
- Ports (all 127.0.0.1): s01 18801, s02 18802 (+ feature-store child 18852), s03 18803, s04 18804, s05 18805,
  s08 18808, s10 18810 (+ inventory child 18860), s11 18811, s12 broker child 18862. s06, s07, s09, s12 listen on
  no service port: s06 is fed on stdin by `producer.py` (harness `--mode pipe`), s07/s09/s12 load themselves
  (harness `--mode self`) and write one record per completed request/job to `SVC_STATS_PATH`, touching
  `SVC_READY_PATH` when warm.
- Lifetimes: HTTP services run under `timeout (SECONDS+40)s` (s08: +50); self-loaded/stdin services exit after
  `SVC_LIFETIME` (run.sh sets SECONDS+30). Helper children (s02 store, s10 inventory, s12 broker) live in the
  service's session and go with it.
- Warm-up: 5 s after the port/ready file for all except s08 (8 s: two uvicorn workers each import transformers
  and build the encoder after the port is bound). s01 builds 32 JPEGs at start-up (several seconds before
  the port opens); s07 fills a ~300 MB table before the workers start.
- Load: locust from a separate process (FastHttpUser, closed loop) with 8 users, except s10 (4 users) and s11
  (4 users paced by `constant_throughput(LOAD_RATE_PER_USER)`: 2/user in A, 4/user in B; the variant is in the
  load generator's env, the service is identical).
- Throughput units: requests/s for HTTP services; s06 and s09 count completed jobs/requests per second;
  s07 counts cohort requests/s over both worker processes; s12 counts jobs/s (one job = 16 texts).
- Threads: s01, s08, s11 set torch to 1 intra-op thread; s03, s05 and s09 rely on single-threaded BLAS or
  no BLAS in the hot path; s04's OpenBLAS thread count and s06's onnxruntime intra-op thread count are the
  switched settings (`SVC_BLAS_THREADS`, `SVC_ORT_THREADS`).
- s02/s10 switch the helper or the client pool (`SVC_STORE_CONNECTIONS`, `INVENTORY_DELAY_MS`), not the
  request handler code.
- Host: 2 vCPUs shared with another session that ran its own load during these measurements, so absolute
  figures and CPU shares move between rounds; every verdict is from the alternating A,B rounds in
  `results/sNN.jsonl`.
- Re-verified after a change: s12 (ONNX model given a per-token projection so the secondary share is real) and
  s08 (tickets carry quoted email history that is cleaned per line, for the same reason). Their first full
  verifications (also kept: s12 B/A 3.0, s08 B/A 3.5) are in `results/old/`; label.toml and the table use the
  re-runs of the current code. s04 was switched from torch to NumPy/OpenBLAS before its only verification.
FTR
} > README.md
