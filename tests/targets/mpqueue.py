"""What the multiprocessing targets' stages share: reading their queue until the parent is gone."""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Callable


def next_item(q: mp.Queue, parent: int) -> object:
    """The next item, or None once the parent is gone (a killed parent sends no None)."""
    while True:
        try:
            return q.get(timeout=1.0)
        except queue.Empty:
            if os.getppid() != parent:
                return None


def start_pipeline(
    first: Callable[..., None], copies: int, last: Callable[..., None], maxsize: int = 0
) -> tuple[mp.Queue, mp.Queue, mp.Queue]:
    """Fork ``copies`` processes of ``first`` (reading the jobs queue, writing the middle one)
    and one of ``last`` (reading the middle queue, writing done): the three queues."""
    ctx = mp.get_context("fork")
    jobs, middle, done = ctx.Queue(maxsize), ctx.Queue(maxsize), ctx.Queue()
    me = os.getpid()
    procs = [ctx.Process(target=first, args=(jobs, middle, me)) for _ in range(copies)]
    procs.append(ctx.Process(target=last, args=(middle, done, me)))
    for p in procs:
        p.daemon = True
        p.start()
    return jobs, middle, done
