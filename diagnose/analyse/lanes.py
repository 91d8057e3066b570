"""Requests outstanding at dependencies against the clients with traffic, from the kernel's
socket times (proc/process.csv ``out_awaiting``, ``clients``: collect/tcpinfo.py).

Little's law with lanes: where the outbound connections in use (its lanes) are awaiting
replies most of the time while more clients than lanes have traffic, the other requests
queue inside the process for a lane (a pool of one connection behind a lock, an
asyncio.Lock held across the call), whatever the code calls them. Their wait looks like I/O
(the one thread of an event loop waits on the dependency) but is a queue: more lanes, not a
faster dependency, is the fix.

Only a loop's waits count (``busy_share_io_loop``: polling its clients too, so free to start
another call): a thread blocked on the dependency alone, a blocking client called on an
event loop say, holds every request behind it by waiting, and the fix is at that call.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from diagnose.analyse.model import Context, rounded

#: readings of the socket times (every 5th /proc tick) below which no share is computed
MIN_FLOW_READINGS = 8
#: the lanes are busy when they await replies this share of the time or more (the rest is
#: the process's own work between replies, longer on a loaded host)
LANES_BUSY = 0.5


def dependency_lanes(ctx: Context) -> None:
    """Step: the lanes to dependencies, how busy they are, and the clients."""
    p, m = ctx.data.process, ctx.metrics
    if p is None or "out_awaiting" not in p or "clients" not in p:
        return
    out = pd.to_numeric(p["out_awaiting"], errors="coerce")
    clients = pd.to_numeric(p["clients"], errors="coerce")
    read = out.notna() & clients.notna()
    if int(read.sum()) < MIN_FLOW_READINGS:
        return
    waiting, seen = out[read].to_numpy(), clients[read].to_numpy()
    lanes = int(waiting.max())
    m["dep_outstanding_mean"] = rounded(float(waiting.mean()), 2)
    m["dep_lanes"] = lanes
    m["clients_active_mean"] = rounded(float(seen.mean()), 2)
    if lanes == 0:
        m["dep_lanes_busy"] = 0.0
        m["dep_queue_share"] = 0.0
        return
    m["dep_lanes_busy"] = rounded(float(waiting.mean()) / lanes, 3)
    # the requests in flight beyond the lanes, as a share of them (clients: one each)
    m["dep_queue_share"] = rounded(max(0.0, 1 - lanes / max(float(seen.mean()), 1e-9)), 3)


def dependency_queue(ctx: Context) -> None:
    """Step (after thread_metrics): the I/O wait split into time at the dependency and time
    queued for a lane: the loop's waits, where the lanes were busy; all of it is at the
    dependency where they were not, or where the socket times were not read."""
    split_io(ctx.metrics)


def split_io(m: dict[str, Any]) -> None:
    """``busy_share_dep_queue`` and ``busy_share_io_dependency`` from ``m``'s I/O share and
    lanes (:func:`dependency_queue`)."""
    io = m.get("busy_share_io")
    if io is None:
        return
    busy, queue = m.get("dep_lanes_busy"), m.get("dep_queue_share")
    loop = min(float(m.get("busy_share_io_loop") or 0.0), io)
    queued = loop * queue if busy is not None and queue is not None and busy >= LANES_BUSY else 0.0
    m["busy_share_dep_queue"] = rounded(queued, 4)
    m["busy_share_io_dependency"] = rounded(io - queued, 4)
