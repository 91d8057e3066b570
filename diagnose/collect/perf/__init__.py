"""perf collectors: native on-CPU stacks, the scheduler view with futex waits, false
sharing (perf c2c) and hardware counters (perf stat), each chosen from a capability probe
(:mod:`diagnose.collect.perf.probe`).

Call chains use frame pointers, not DWARF: DWARF wrote over a hundred times more per second
and still stopped inside NumPy's ufunc loops and libc's futex wrapper, while py-spy supplies
the Python frames above the native ones anyway. No throughput cost of perf sampling or
scheduler tracing could be resolved from the noise (docs/performance.md, "perf's own
cost: frame pointers or DWARF").
"""
