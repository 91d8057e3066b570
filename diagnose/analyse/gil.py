"""The GIL: how many threads waited for it (the /proc sampler saw them blocked in futex() on
an address inside ``_PyRuntime``, see analyse/threads.py), and who held it (py-spy --gil)."""

from __future__ import annotations

from collections import defaultdict

from diagnose.analyse.model import Context, most_common, rounded
from diagnose.analyse.stages import thread_category
from diagnose.formats.pyspy import parse_raw


def gil_waiters(ctx: Context) -> None:
    """Step: threads blocked on the GIL per tick. Without the GIL's address the GIL share
    is not measured for a Python target (and 0 for any other)."""
    tt = ctx.threads
    if tt is None:
        return
    m = ctx.metrics
    if tt.gil_range is not None:
        iv = tt.intervals
        counts = iv[iv["wait_class"] == "gil"].groupby("t").size()
        counts = counts.reindex(iv["t"].unique(), fill_value=0)
        m["gil_waiters_mean"] = rounded(float(counts.mean()), 3) if len(counts) else 0.0
        m["gil_waiters_max"] = int(counts.max()) if len(counts) else 0
    else:
        m["busy_share_gil"] = None if ctx.data.bundle.manifest.target.is_python else 0.0


def gil_holders(ctx: Context) -> None:
    """Step: which threads and code held the GIL (py-spy --gil samples)."""
    if ctx.data.gil_folded is None:
        return
    m = ctx.metrics
    by_thread: dict[str, float] = defaultdict(float)
    by_site: dict[str, float] = defaultdict(float)
    total = preprocess = 0.0
    for tid, name, stack, count in parse_raw(ctx.data.gil_folded):
        by_thread[f"{name or 'thread'} ({tid})"] += count
        by_site[stack[-1] if stack else "?"] += count
        total += count
        if stack and thread_category(ctx, tid, tuple(stack)) == "preprocess":
            preprocess += count
    m["gil_held_samples"] = int(total)
    m["gil_holder_preprocess_share"] = rounded(preprocess / total, 3) if total > 0 else 0.0
    if total > 0:
        t, n = most_common(by_thread, 1)[0]
        m["gil_holder_top"] = t
        m["gil_holder_top_share"] = rounded(n / total, 3)
        m["gil_holder_top_site"] = most_common(by_site, 1)[0][0]
    else:
        m["gil_holder_top"] = ""
        m["gil_holder_top_share"] = 0.0
        m["gil_holder_top_site"] = ""
    extra = ctx.out.extra
    extra["gil_holders"] = (
        [(k, rounded(v / total, 3)) for k, v in most_common(by_thread, 10)] if total else []
    )
    extra["gil_sites"] = (
        [(k, rounded(v / total, 3)) for k, v in most_common(by_site, 10)] if total else []
    )
