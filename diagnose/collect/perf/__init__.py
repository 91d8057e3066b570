"""perf collectors: native on-CPU stacks, the scheduler view with futex waits, false
sharing (perf c2c) and hardware counters (perf stat), each chosen from a capability probe
(:mod:`diagnose.collect.perf.probe`).

Measured on the project's 2-core KVM guest (no PMU, perf 6.1) against the targets in
tests/targets/perf_target.py, with the collectors' exact perf commands
(``python tests/targets/perf_overhead.py --rounds 5 --seconds 12 --warmup 2``; medians of 5
alternating rounds, MB written per 10 s of recording):

==========  ===========  =============  =================
workload    cpu-clock fp  cpu-clock DWARF  scheduler tracing
==========  ===========  =============  =================
lock        0.05 MB       10.8 MB        46 MB
oversub     0.05 MB        8.5 MB        2.9 MB
gil         0.05 MB        7.5 MB        7.8 MB
==========  ===========  =============  =================

DWARF also cut 259 of 295 stacks inside NumPy's ufunc machinery (a 3 s run), so on-CPU
call chains use frame pointers; py-spy supplies the Python frames above them. DWARF call
chains on sched_switch wrote 153 MB in 3 s for the lock target and unwound no further than
libc's futex wrapper, so the scheduler view uses frame pointers too.

Throughput cost could not be resolved on this host while it was measured: the same
configuration varied by +-50% between rounds (load average 9-14 on 2 cores from other
sessions); paired per-round medians were within that noise for every configuration
(lock: fp 0.2%, DWARF -8%, sched 0.1%; oversub: 5%, 19%, 17%; gil: -6%, 3%, -10%).
Against samples/lock_contention.py (8 threads on one lock), throughput against no profiler
(median of 5 rounds / median of per-round ratios) was: fp -5.1% / +0.8%, DWARF +2.6% /
+2.4%, scheduler tracing +5.8% / +8.8%, all within the +-10% the same configuration varied
between rounds: no cost could be resolved. They wrote 0.07, 13.7 and 39.7 MB per 10 s. The
platform notes' quieter measurement likewise found perf sampling and `perf sched record`
costing nothing measurable (within +-5 points) for such services.
"""
