#!/usr/bin/env bash
cd /work/blind/b15
{
cat <<'HDR'
# Batch b15: 12 small inference services with labelled bottlenecks

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
- Ports: HTTP services listen on 1880N for sNN (s01 18801, s02 18802, s03 18803, s04 18804, s07 18807, s08 18808,
  s11 18811, s12 18812); s07's feature-store child listens on 18857. s05, s06, s09, s10 listen on nothing.
- Lifetime: run.sh passes SVC_LIFETIME = SECONDS + 40; every service (and helper child) exits by itself after it.
  s07/s11 service.py is a small launcher that starts gunicorn (and s07's store child) and stops them at the lifetime.
- Warm-up: all services are steady within ~5 s of the harness seeing them ready (model built / port open before that).
- Load: HTTP services by locust (FastHttpUser, closed loop unless noted) from a separate process; s05 fed on stdin by
  producer.py (separate process); s06, s09, s10 load themselves with in-process client threads/coroutines. s08's
  arrival rate is the load generator's env (LOAD_RATE_PER_USER), not the service's.
- Units: requests/s for HTTP; s05 = events scored/s; s06, s09 = jobs/s; s10 = 8-query batches/s.
- Threads: most services pin BLAS/OpenMP to 1 thread via env in run.sh (OMP/MKL/OPENBLAS_NUM_THREADS=1) or
  torch.set_num_threads(1) in code; s04 sets its onnxruntime intra-op threads from SVC_ORT_THREADS.
- s12 starts reindex.py in its own session (not part of the service's session tree, so its CPU is not in the
  service's CPU figure); it exits when the service process goes away or at the lifetime.
- Verification ran on the shared 2-vCPU host, one verification at a time; runs of s01-s04 and s07 overlapped short
  smoke tests of later services, which shows as spread in their A/B ranges.
- Earlier tries kept in results/old/: s05 try 1 (before its featurisation was made heavier and its feature width
  reduced: B/A 1.09, not separated), s12 try 1 (3 rebuild processes instead of 8: B/A 1.02), s11 tries 1-2 (same
  code as the final; try 1 B/A 1.00 with every B run getting ~1 core, try 2 B/A 1.76 but one B run below the A max).
  s11's final try also had one B run (200.5) below the A max (201.4) when that B run got ~1 core on the shared host;
  it is therefore dropped.
FTR
} > README.md
