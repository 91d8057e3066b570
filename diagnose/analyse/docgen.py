"""Print docs/metrics.md: ``python -m diagnose.analyse.docgen > docs/metrics.md``.

A module of its own so that ``python -m`` runs it without importing the registry twice
(running ``registry`` itself as ``__main__`` would give it a second, empty metric table).
"""

from __future__ import annotations

import sys

from diagnose.analyse.registry import markdown


def main() -> None:
    sys.stdout.write(markdown())


if __name__ == "__main__":
    main()
