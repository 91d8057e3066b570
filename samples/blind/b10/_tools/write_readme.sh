#!/usr/bin/env bash
cd /work/blind/b10
{
cat <<'HDR'
# Batch b10: 12 small inference services with labelled bottlenecks

Each `sNN/` has `service.py` (variant switched only by `SVC_*` env vars, or the load generator's env for the
arrival-rate case), `run.sh a|b SECONDS` (execs `harness.py`), `label.toml` (label written before measuring;
verdict and result filled from `results/sNN.jsonl`), a `locustfile.py` for HTTP services or its own load
(stdin producer, in-process clients, broker child), and helper-child scripts where used.

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
- Ports (loopback only): s01 18801, s02 18802, s03 18803, s04 18804 (+ feature-store child 18854), s07 18807,
  s08 18808, s09 18809. s05 uses a cache child on 18855, s11 a broker child on 18861; s05, s06, s10, s11, s12
  listen on nothing for clients (self-loaded or stdin-fed).
- Load: HTTP services are driven by locust from a separate process (users as in each label.toml `load`);
  s05/s10/s11/s12 drive themselves with in-process clients/feeders; s06 reads JSON lines on stdin from `producer.py`
  (harness `--mode pipe`). s09's variant switch (SVC_ARRIVAL_RATE) is read by the load generator only.
- Warm-up: every service is steady within ~5 s of start (harness waits for the port / ready file, then 5 s);
  s06 builds a ~300 MB table before signalling ready.
- Lifetime: each run.sh sets SVC_LIFETIME = window + 12..30 s; services exit by themselves (timer -> SIGTERM /
  os._exit) and stop their helper children.
- Thread pins set in run.sh: OPENBLAS_NUM_THREADS=1 for the NumPy services (s05, s06, s10, s11, s12);
  torch intra-op threads set to 1 (in code, or SVC_TORCH_THREADS=1 per gunicorn worker in s03).
- Host: 2 vCPUs shared with unrelated processes that came and went during verification (another test run took up to
  ~1 core at times); this is visible as spread in the A/B ranges. On this host the two vCPUs do not scale
  float SIMD work (two BLAS processes together do no more than one), so no counterfactual here relies on adding
  parallel FP throughput.
- Some A runs of s01 overlapped short smoke tests of other services (round 2 and 3 A are lower than round 1);
  round 1 alone (no overlap) gives B/A 86.2/30.3 = 2.8.
- s03 was first written with a different label (thread oversubscription, A = 4 torch threads per worker with
  OMP_WAIT_POLICY=ACTIVE, B = 1 thread, 48-row batches). One round gave B/A 214 -> 265 req/s (1.24, B limited by
  the load generator) and side tests on this shared host could not make that label reliably true, so that label
  was dropped before finishing; the service was re-labelled (label.toml rewritten before its measured runs) and
  only the re-labelled runs are in results/s03.jsonl (the first round is kept in results/s03.try1.jsonl.old).
  A second try of the re-labelled service ran with 2 torch threads per worker (8 OpenMP threads on 2 busy cores):
  B/A was ~2.9 but the service used only ~0.6 cores at ~1 s per request, i.e. per-op thread waits, not the model
  arithmetic, set the pace, so those runs (results/s03.try2.jsonl.old) were set aside; the kept configuration pins
  1 torch thread per worker (label.toml updated before its runs).
- s08's first verification used 8-row requests (~1 ms each): A 771 vs B 955 req/s (B/A 1.24, results/s08.try1.jsonl.old);
  at ~1000 req/s the locust process took the remaining CPU, so B was capped by the load generator, not the service.
  The kept runs use 64-row requests (label unchanged apart from the load line).
FTR
} > README.md
