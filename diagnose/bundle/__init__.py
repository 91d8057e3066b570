"""The capture bundle: a directory with a versioned manifest and the collectors' files.

It is the only thing that crosses from capture to analysis: everything downstream reads a
bundle, never the live target, so a bundle copied to a laptop can be analysed there.
See ``docs/bundle.md`` for the format.
"""

from diagnose.bundle.manifest import (
    SCHEMA,
    SCHEMA_VERSION,
    CollectorRecord,
    CollectorStatus,
    Manifest,
)
from diagnose.bundle.reader import Bundle
from diagnose.bundle.writer import BundleWriter

__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Bundle",
    "BundleWriter",
    "CollectorRecord",
    "CollectorStatus",
    "Manifest",
]
