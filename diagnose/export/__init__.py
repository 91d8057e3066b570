"""Export a bundle's flame views for other profilers: pprof (Pyroscope, Parca, Grafana, ``go
tool pprof``) and speedscope.

Data flows one way: bundle -> analysis (its flame views, thread roles, stages) ->
:mod:`diagnose.export.views` (one :class:`~diagnose.export.profile.FlatProfile` per view) ->
an encoder of :mod:`diagnose.export.encoders` -> :mod:`diagnose.app.export` (the files).
docs/export.md says how to open each file.
"""
