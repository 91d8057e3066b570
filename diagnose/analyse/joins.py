"""Joins between the bundle's tables: by time and thread, and once per distinct value.

py-spy, /proc and perf each record on their own clock ticks; the analysis meets them here:
the Python stack a thread was in at a moment, the items that fall inside time windows.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
import numpy.typing as npt
import pandas as pd

IntArray = npt.NDArray[np.int64]

#: How far past the end of py-spy's interval a moment still takes its stack: py-spy's
#: clock is aligned to the bundle's within a few ms, and it samples every 10 ms.
STACK_TOLERANCE_S = 0.06


def map_distinct(
    values: pd.Series | npt.NDArray[Any], func: Callable[[Any], Any]
) -> npt.NDArray[Any]:
    """``func`` of every value, calling it once per distinct value (an object array).
    Missing values (None, NaN) count as one value and are passed as NaN.

    A long capture has millions of rows but few distinct stacks, frames or addresses:
    this is what keeps the analysis linear in rows with a small constant."""
    arr = np.asarray(values)
    if arr.dtype.kind in "iub":  # integers (stack ids): hashed as integers, not as objects
        codes, uniques = pd.factorize(arr)
        keys = uniques.tolist()  # Python ints, as the object path passes them
    else:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object), use_na_sentinel=False)
        keys = list(uniques)
    out = np.empty(len(keys), dtype=object)
    out[:] = [func(u) for u in keys]
    return out[codes]


def select_text(conds: list[Any], choices: list[str], default: str, index: pd.Index) -> pd.Series:
    """``np.select`` for text choices, as a Series whose rows share one string object per
    choice: ``np.select`` on strings makes a fixed-width array that pandas turns into one
    new string per row (about 50 MB per million rows)."""
    names = [*dict.fromkeys([*choices, default])]
    code = {name: i for i, name in enumerate(names)}
    picked = np.select(conds, [code[c] for c in choices], default=code[default])
    return pd.Series(np.array(names, dtype=object)[picked], index=index)


class TextCodes:
    """A text column factorised once, for equality tests on its codes: a comparison per row
    of pandas' string dtype checks every row for NA and compares Python strings (about 20x
    the time of a comparison of codes on the /proc tables of a long capture). Missing
    values (None, NaN) equal nothing."""

    def __init__(self, values: pd.Series | npt.NDArray[Any]) -> None:
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        self.codes: npt.NDArray[np.intp] = np.asarray(codes)
        self._index = {v: i for i, v in enumerate(uniques.tolist()) if isinstance(v, str)}

    def eq(self, *values: str) -> npt.NDArray[np.bool_]:
        """Whether each row is one of ``values``."""
        wanted = [self._index[v] for v in values if v in self._index]
        if len(wanted) == 1:
            return np.equal(self.codes, wanted[0])
        return np.isin(self.codes, wanted)


def python_stack_at(
    py_intervals: pd.DataFrame | None,
    t: npt.ArrayLike,
    tid: npt.ArrayLike,
    tolerance: float = STACK_TOLERANCE_S,
) -> IntArray:
    """The py-spy stack id thread ``tid[i]`` was in at time ``t[i]`` (-1 where unknown):
    the last interval of that thread that started at or before ``t[i]``, if ``t[i]`` is no
    more than ``tolerance`` after its end."""
    return python_stack_seen(py_intervals, t, tid, 0.0, tolerance)[0]


def python_stack_seen(
    py_intervals: pd.DataFrame | None,
    t: npt.ArrayLike,
    tid: npt.ArrayLike,
    period: float,
    tolerance: float = STACK_TOLERANCE_S,
) -> tuple[IntArray, npt.NDArray[np.bool_]]:
    """:func:`python_stack_at`, and whether py-spy saw the thread in that stack again after
    ``t[i]``: an interval is a run of identical samples ``period`` apart that ends at the
    first different one, so ``t[i]`` at least one period before its end had a later sample
    of the same stack. Without one the stack may be stale: at 18 Hz a thread can leave a
    line, run a whole short call elsewhere and be joined to the line it left."""
    ts = np.asarray(t, dtype=float)
    out = np.full(len(ts), -1, dtype=np.int64)
    seen = np.zeros(len(ts), dtype=bool)
    if py_intervals is None or py_intervals.empty or len(ts) == 0:
        return out, seen
    left = pd.DataFrame({"t": ts, "tid": np.asarray(tid), "i": np.arange(len(ts))})
    merged = pd.merge_asof(
        left.sort_values("t"),
        py_intervals.sort_values("start"),
        left_on="t",
        right_on="start",
        by="tid",
        direction="backward",
    )
    ok = merged["stack_id"].notna() & (merged["t"] <= merged["end"] + tolerance)
    idx = merged.loc[ok, "i"].to_numpy()
    out[idx] = merged.loc[ok, "stack_id"].astype("int64").to_numpy()
    seen[idx] = (merged.loc[ok, "t"] <= merged.loc[ok, "end"] - period).to_numpy()
    return out, seen


def pairs(
    mask: npt.NDArray[np.bool_],
    start: npt.NDArray[np.float64],
    end: npt.NDArray[np.float64],
    lows: npt.NDArray[np.float64],
    highs: npt.NDArray[np.float64],
    side: Literal["left", "right"] = "left",
) -> tuple[IntArray, IntArray]:
    """Every (window, item) pair with the item inside the window, as two index arrays.

    Windows are ``start[i]..end[i]`` for ``i`` in ``mask``. Items are sorted; item ``k`` can
    be in window ``i`` from the first whose ``lows[k]`` is not before ``start[i]`` up to the
    last whose ``highs[k]`` is before ``end[i]`` (``side`` 'right': or at it). Points pass
    their times as both; intervals their ends as ``lows`` and their starts as ``highs``."""
    idx = np.flatnonzero(mask)
    lo = np.searchsorted(lows, start[idx], "left")
    n = np.clip(np.searchsorted(highs, end[idx], side) - lo, 0, None)
    w = np.repeat(idx, n)
    k = np.repeat(lo, n) + (np.arange(int(n.sum())) - np.repeat(np.cumsum(n) - n, n))
    return w, k
