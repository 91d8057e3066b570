"""diagnose: find why an AI inference service collapses under concurrency.

Data flows one way: collect -> bundle -> analyse -> verdict (rules) -> render.
The click CLI in :mod:`diagnose.cli` is a thin layer on top of these packages.
"""

__version__ = "0.1.0"
