"""``diagnose sweep``: a stepped load test with a real load generator, a capture per step,
the knee, and the capacity plan (docs/sweep.md).

The rooms, in the order data flows:

- :mod:`~diagnose.sweep.plan`: the user's steps, settings (``--vary``) and load command,
  validated into a :class:`~diagnose.sweep.plan.SweepPlan` (pure);
- :mod:`~diagnose.sweep.loadgen`: the drivers of existing load generators (locust, any
  command with ``{users}`` such as wrk) and the parsers of their figures;
- :mod:`~diagnose.app.sweep_runner`: per setting and step, warm up, capture, take the
  generator's figures for the same window and its own CPU; the record (``sweep.json``);
- :mod:`~diagnose.sweep.analysis`: the knee, the band of each step, the recommendations
  and the best setting, from a table of steps (pure, unit-tested on hand-built tables);
- :mod:`~diagnose.sweep.model`: the report dict (record + analysis + each step's verdict +
  the comparison across the knee) that render/sweep.py displays.
"""
