"""The capture bundle: a directory with a versioned manifest and the collectors' files.

It is the only thing that crosses from capture to analysis: everything downstream reads a
bundle, never the live target, so a bundle copied to a laptop can be analysed there.
See ``docs/bundle.md`` for the format.
"""

from typing import TYPE_CHECKING, Any

from diagnose.bundle.manifest import (
    SCHEMA,
    SCHEMA_VERSION,
    CollectorRecord,
    CollectorStatus,
    Manifest,
)
from diagnose.bundle.writer import BundleWriter

if TYPE_CHECKING:
    from diagnose.bundle.reader import Bundle


def __getattr__(name: str) -> Any:
    # the reader needs pandas (half a second to import): a capture does not read bundles, so
    # ``diagnose attach`` starts recording without it (tests/unit/test_cli_start.py)
    if name == "Bundle":
        from diagnose.bundle.reader import Bundle

        return Bundle
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "SCHEMA",
    "SCHEMA_VERSION",
    "Bundle",
    "BundleWriter",
    "CollectorRecord",
    "CollectorStatus",
    "Manifest",
]
