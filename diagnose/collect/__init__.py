"""Collectors: each records one view of the live target into the bundle.

One module per source (py-spy, /proc, perf, the system snapshot); each knows only its tool
and the bundle paths it writes. :mod:`diagnose.collect.session` runs them together.
"""
