"""``diagnose history STORE``: a store's verdict timeline as data (docs/watch.md, "History").

The model is a plain dict, the JSON ``--json`` prints: ``captures`` (every row of the
index, oldest first, each with a ``link`` to what is kept of it, its ``latency`` in words
and, for a latency drift, ``comparison_link``) and ``bands`` (runs of consecutive captures
with the same verdict), which the terminal and the HTML page show.
"""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Any

from diagnose import __version__
from diagnose.watch.drift import latency_words
from diagnose.watch.store import REPORT, CaptureRow, Store

HISTORY_SCHEMA = "diagnose.history/1"
#: what the store names a capture's directory; any other path from an index gets no link
_OWN_PATH = re.compile(r"captures/[0-9]+-[0-9]{8}-[0-9]{6}(-[0-9]+)?")


def link(store: Store, row: CaptureRow, base: str = "") -> str | None:
    """The page (kept whole) or report.json of ``row``, relative to ``base`` (the
    directory the history page is written to, relative to the store: "" for the store)."""
    if not _OWN_PATH.fullmatch(row.path):
        return None
    name = (
        "report.html" if row.kept_whole and store.dir.is_file(f"{row.path}/report.html") else REPORT
    )
    return f"{base}{row.path}/{name}" if store.dir.is_file(f"{row.path}/{name}") else None


def comparison_link(store: Store, row: CaptureRow, base: str = "") -> str | None:
    """The comparison a drifted capture was kept with (its page, else its compare.json),
    relative to ``base`` as :func:`link`'s."""
    if not row.drift or not row.comparison or not _OWN_PATH.fullmatch(row.path):
        return None
    for name in ("compare.html", "compare.json"):
        if store.dir.is_file(f"{row.path}/{name}"):
            return f"{base}{row.path}/{name}"
    return None


def _bands(rows: list[CaptureRow]) -> list[dict[str, Any]]:
    bands: list[dict[str, Any]] = []
    for r in rows:
        end = r.started_unix + (r.duration_s or 0.0)
        b = bands[-1] if bands else None
        if b is not None and (b["category"], b["kind"]) == r.verdict:
            b.update(to=r.started, to_unix=end, captures=b["captures"] + 1, headline=r.headline)
            b["_conf"].append(r.confidence)
            continue
        bands.append({"category": r.category, "kind": r.kind, "from": r.started,
                      "from_unix": r.started_unix, "to": r.started, "to_unix": end,
                      "captures": 1, "headline": r.headline, "_conf": [r.confidence]})  # fmt: skip
    for b in bands:
        conf = [c for c in b.pop("_conf") if c is not None]
        b["confidence"] = round(sum(conf) / len(conf), 3) if conf else None
    return bands


def history(store: Store, base: str = "") -> dict[str, Any]:
    """The timeline of ``store``; links relative to ``base`` (see :func:`link`)."""
    rows = store.captures()
    captures = [
        {**r.to_dict(), "link": link(store, r, base),
         "latency": latency_words(r.p99_ms, r.p99_baseline_ms, r.drift, r.drift_from),
         "comparison_link": comparison_link(store, r, base)}
        for r in rows
    ]  # fmt: skip
    bands = _bands(rows)
    return {
        "schema": HISTORY_SCHEMA,
        "tool_version": __version__,
        "generated": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "store": str(store.path),
        "start_unix": bands[0]["from_unix"] if bands else None,
        "end_unix": bands[-1]["to_unix"] if bands else None,
        "captures": captures,
        "bands": bands,
    }
