"""Flame graphs: weighted stacks rooted at their thread (``thread (TID): NAME``), which the
HTML report and ``diagnose compare`` draw as trees.

Four views: ``cpu`` (on-CPU samples, built by the on-CPU step), ``offcpu`` (perf's blocked
stacks, built by the scheduling step), and the two here: ``wall`` (every Python stack, for
as long as py-spy saw it) and ``waits`` (blocked time by wait class and Python stack).
"""

from __future__ import annotations

from collections import defaultdict

from diagnose.analyse.model import Context
from diagnose.formats.stacks import Stack, ThreadFrame

#: the wait classes the waits view shows
WAIT_VIEWS = ("gil", "lock", "io")


def wall_and_waits(ctx: Context) -> None:
    """Step: the wall-clock and the waits flame graphs."""
    data, flames = ctx.data, ctx.out.flames
    names = data.py_names
    iv = data.py_intervals
    if iv is not None and not iv.empty:
        per = (iv["end"] - iv["start"]).groupby([iv["tid"], iv["stack_id"]], sort=False).sum()
        wall: dict[Stack, float] = defaultdict(float)
        for (tid, sid), d in zip(per.index, per.to_numpy(), strict=True):
            root = ThreadFrame(int(tid), names.get(int(tid), "")).format()
            wall[(root, *data.py_stacks.get(int(sid), ()))] += float(d)
        flames["wall"] = list(wall.items())
    if ctx.threads is None:
        return
    ticks = ctx.threads.intervals
    off: dict[Stack, float] = defaultdict(float)
    for state in WAIT_VIEWS:
        sel = ticks[ticks[state] > 0]
        per = sel.groupby(["tid", "stack_id"], sort=False)[state].sum()
        for (tid, sid), w in zip(per.index, per.to_numpy(), strict=True):
            st = data.py_stacks.get(int(sid), ()) if sid >= 0 else ()
            root = ThreadFrame(int(tid), names.get(int(tid), "")).format()
            off[(f"{state} wait", root, *st)] += float(w)
    flames["waits"] = list(off.items())  # empty: measured, and no thread waited
