"""Continuous mode and what reads its output: ``diagnose watch`` (a short capture every few
minutes into a store), its Prometheus metrics, ``diagnose history`` (a store's verdict
timeline) and ``diagnose fleet`` (many pods' latest verdicts side by side). docs/watch.md."""
