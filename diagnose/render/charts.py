"""What the HTML report draws, from the report dict alone (report.json re-renders it): bounded flame-graph trees and plotly figures.

Everything here is plain, JSON-ready data: ``chart_data`` is serialised into the page and
drawn by plotly.js (inlined once, see render/html.py) and a little vanilla JS
(templates/html/report.js).

Text the target controls (thread and function names, file paths) is cut to one bounded line
with :func:`~diagnose.render.text.plain`. plotly.js reads text as a small HTML dialect
(``<b>``, ``<br>``, ``<a href>``), so strings placed straight into a figure go through
:func:`~diagnose.render.text.plotly_text`; the flame-graph nodes travel raw (for search and
for the thread filter's ``textContent``) and report.js escapes them the same way before
plotly sees them.
"""

from __future__ import annotations

import heapq
import re
import zlib
from collections import defaultdict
from collections.abc import Iterable, Sequence
from functools import lru_cache
from typing import Any

from diagnose.analyse.frames import is_native_frame, split_frame
from diagnose.formats.stacks import Stack, ThreadFrame
from diagnose.render.model import jsonable, report_flames
from diagnose.render.schema import Report
from diagnose.render.text import plain, plotly_text

#: Bounds of one flame graph: at most this many boxes, and none under this share of its
#: scope (smaller frames are merged into their caller). A 64-thread bundle has thousands of
#: distinct stacks; measured here (2 cores, headless Chromium), the merged view of a
#: 64-thread, 60 s capture (~560 boxes) draws in 0.6 s, all 2000 boxes side by side in ~3.5 s.
MAX_NODES = 2000
MIN_SHARE = 0.0005
FRAME_CHARS = 300  # a frame's text in the page (hover, search)
LABEL_CHARS = 80  # a box's label

STATE_COLORS = {
    "running": "#2e7d32",
    "runnable": "#f9a825",
    "gil": "#7b1fa2",
    "lock": "#c62828",
    "io": "#1565c0",
    "idle": "#d5d5d5",
    "other": "#8d6e63",
}
STATE_LABELS = {
    "running": "running",
    "runnable": "runnable (waiting for a core)",
    "gil": "GIL wait",
    "lock": "lock wait",
    "io": "I/O",
    "idle": "idle",
    "other": "other",
}
_WARM = ("#e8590c", "#f08c00", "#e67700", "#d9480f", "#f59f00", "#fd7e14", "#c2410c", "#ea580c")
_COOL = ("#1c7ed6", "#1098ad", "#0ca678", "#3b5bdb", "#1971c2", "#0b7285", "#2b8a3e", "#5c7cfa")
_ROOT_COLOR = "#868e96"
_THREAD_COLOR = "#adb5bd"

FLAME_VIEWS = {
    "cpu": "On-CPU",
    "wall": "Wall clock",
    "waits": "Waits",
}

_FONT = {"family": "system-ui, -apple-system, Segoe UI, Roboto, sans-serif", "size": 12}


# --- flame graphs --------------------------------------------------------------------------


def _pick(palette: Sequence[str], key: str) -> str:
    return palette[zlib.crc32(key.encode("utf-8", "replace")) % len(palette)]


#: a Python frame: 'name (file:LINE)', or 'name (file, all lines)' once its lines are merged
_PY_FRAME = re.compile(
    r"^(?P<name>.*) \((?P<file>[^()]*?)(?::(?P<line>\d+)|(?P<all>, all lines))\)$", re.S
)
ALL_LINES = ", all lines"
#: the interpreter's own code: libpython, or a python executable with it linked in
_INTERPRETER = re.compile(r"(^|/)(libpython\d[\w.]*\.so[\w.]*|python\d(\.\d+)?[a-z]*)$")
INTERPRETER_FRAME = "[Python interpreter] (libpython)"
#: native runs of one library longer than this keep their first and last frame, the rest
#: becomes one box (the kernel's 10-frame syscall and scheduler chains, say)
FOLD_RUN = 5


# frames repeat in thousands of stacks: each distinct one is classified once (bounded caches)
@lru_cache(maxsize=1 << 16)
def _python_frame(frame: str) -> re.Match[str] | None:
    return None if ThreadFrame.parse(frame) is not None else _PY_FRAME.match(frame)


@lru_cache(maxsize=1 << 16)
def is_interpreter_frame(frame: str) -> bool:
    """A native frame of the CPython interpreter itself (``_PyEval_EvalFrameDefault
    (libpython3.11.so.1.0)``): under a Python frame it only says that Python ran it."""
    if _python_frame(frame) is not None or not is_native_frame(frame):
        return False
    return bool(_INTERPRETER.search(split_frame(frame)[1]))


@lru_cache(maxsize=1 << 16)
def merge_lines(frame: str) -> str:
    """'name (file:LINE)' -> 'name (file, all lines)': one box per Python function."""
    m = _python_frame(frame)
    if m is None or m.group("line") is None:
        return frame
    return f"{m.group('name')} ({m.group('file')}{ALL_LINES})"


def simplify_native(stack: Sequence[str]) -> tuple[str, ...]:
    """Interpreter frames under a Python frame dropped (the Python frame says what ran);
    elsewhere a run of them becomes one box; a native run of one library longer than
    FOLD_RUN keeps its first and last frames, the middle becomes one box."""
    out: list[str] = []
    python_above = False
    i, n = 0, len(stack)
    while i < n:
        f = stack[i]
        if is_interpreter_frame(f):
            j = i
            while j < n and is_interpreter_frame(stack[j]):
                j += 1
            if not python_above:
                out.append(INTERPRETER_FRAME)
            i = j
            continue
        if _python_frame(f) is None and is_native_frame(f):
            lib = split_frame(f)[1]
            j = i
            while (
                j < n
                and is_native_frame(stack[j])
                and not is_interpreter_frame(stack[j])
                and split_frame(stack[j])[1] == lib
            ):
                j += 1
            run = stack[i:j]
            if len(run) > FOLD_RUN:
                out += [run[0], f"[{len(run) - 2} frames] ({lib})", run[-1]]
            else:
                out += run
            i = j
            continue
        python_above = python_above or _python_frame(f) is not None
        out.append(f)
        i += 1
    return tuple(out)


def simplified(
    stacks: Iterable[tuple[Sequence[str], float]], lines: bool, native: bool
) -> dict[Stack, float]:
    """The stacks with a function's lines merged (``lines``) and interpreter frames hidden,
    long native chains folded (``native``); stacks that become the same add up."""
    out: dict[Stack, float] = defaultdict(float)
    for st, w in stacks:
        t: Sequence[str] = st
        if native:
            t = simplify_native(t)
        if lines:
            t = tuple(merge_lines(f) for f in t)
        out[tuple(t)] += w
    return dict(out)


def _node_look(frame: str, depth: int) -> tuple[str, str, bool]:
    """(label, colour, is_thread) of one frame of a stack. A Python frame's label shows its
    line unless the lines of its function are merged."""
    thread = ThreadFrame.parse(frame)
    if thread is not None:
        tid, name = thread.tid, thread.name
        return (f"{name} ({tid})" if name else f"thread {tid}"), _THREAD_COLOR, True
    if depth == 1 and frame.endswith(" wait"):
        state = frame[: -len(" wait")]
        if state in STATE_COLORS:
            return STATE_LABELS[state], STATE_COLORS[state], False
    py = _PY_FRAME.match(frame)
    if py is not None:
        name, file = py.group("name"), py.group("file")
        label = f"{name}:{py.group('line')}" if py.group("line") else name
        return label, _pick(_WARM, file or name), False
    name, file = split_frame(frame)
    if frame == INTERPRETER_FRAME:
        return "Python interpreter", _ROOT_COLOR, False
    if is_native_frame(frame):
        return name, _pick(_COOL, file or name), False
    return name, _pick(_WARM, file or name), False


def flame_tree(
    stacks: Iterable[tuple[Sequence[str], float]],
    root_label: str = "all",
    max_nodes: int = MAX_NODES,
    min_share: float = MIN_SHARE,
) -> dict[str, Any] | None:
    """Merge weighted stacks (root frame first) into a tree for plotly's icicle chart.

    The tree is bounded: nodes are expanded from the heaviest down, a node under
    ``min_share`` of its scope is not drawn (its weight stays in its caller), and no more
    than ``max_nodes`` are drawn; threads are drawn whatever their share. The scope of a
    node below a thread's root frame is that thread, so each thread is drawn to the same
    relative detail (a thread filter shows it well) and shares the node budget fairly;
    above the threads, the scope is the total.
    Columns, one entry per node, parents before children: ``parent`` (index, -1 for the
    root), ``label``, ``frame`` (full text), ``value``, ``color``, ``thread`` (index into
    ``threads`` for nodes at or below a thread's root frame, else -1). ``hidden_share``:
    share of the total not broken down further.
    """
    items = [(tuple(st), float(w)) for st, w in stacks if w and w > 0]
    total = sum(w for _, w in items)
    if total <= 0:
        return None
    tree = _FlameTree(root_label, total, max_nodes, min_share)
    tree.expand(0, 0, items, total)
    tree.grow()
    return tree.to_dict()


#: a node to draw: (-share of scope, seq, parent, depth, frame, its stacks, weight, scope)
_Candidate = tuple[float, int, int, int, str, list[tuple[Stack, float]], float, float]


class _FlameTree:
    """:func:`flame_tree`'s columns, grown from the heaviest candidate down."""

    def __init__(self, root_label: str, total: float, max_nodes: int, min_share: float) -> None:
        self.total, self.max_nodes, self.min_share = total, max_nodes, min_share
        self.parent: list[int] = [-1]
        self.label: list[str] = [root_label]
        self.frame: list[str] = [root_label]
        self.value: list[float] = [total]
        self.color: list[str] = [_ROOT_COLOR]
        self.thread: list[int] = [-1]
        self.threads: list[dict[str, Any]] = []
        self.thread_index: dict[str, int] = {}
        self.hidden = 0.0
        self.max_depth = 0
        self.heap: list[_Candidate] = []
        self.seq = 0

    def expand(
        self, node: int, depth: int, members: list[tuple[Stack, float]], scope: float
    ) -> None:
        groups: dict[str, list[tuple[Stack, float]]] = defaultdict(list)
        weights: dict[str, float] = defaultdict(float)
        for st, w in members:
            if len(st) > depth:
                groups[st[depth]].append((st, w))
                weights[st[depth]] += w
        for f, w in weights.items():
            # every thread gets its box (the thread filter lists it), however small
            if w >= scope * self.min_share or (depth < 2 and ThreadFrame.parse(f) is not None):
                item = (-w / scope, self.seq, node, depth + 1, f, groups[f], w, scope)
                heapq.heappush(self.heap, item)
                self.seq += 1
            else:
                self.hidden += w

    def grow(self) -> None:
        while self.heap:
            _, _, par, depth, f, members, w, scope = heapq.heappop(self.heap)
            if len(self.parent) >= self.max_nodes:
                self.hidden += w
                continue
            idx = len(self.parent)
            lab, col, is_thread = _node_look(f, depth)
            if is_thread:
                thr = self.thread_index.setdefault(f, len(self.threads))
                if thr == len(self.threads):
                    self.threads.append({"label": plain(lab, LABEL_CHARS), "value": 0.0})
                self.threads[thr]["value"] = round(self.threads[thr]["value"] + w, 6)
                scope = w
            else:
                thr = self.thread[par]
            self.parent.append(par)
            self.label.append(plain(lab, LABEL_CHARS))
            self.frame.append(plain(f, FRAME_CHARS))
            self.value.append(round(w, 6))
            self.color.append(col)
            self.thread.append(thr)
            self.max_depth = max(self.max_depth, depth)
            self.expand(idx, depth, members, scope)

    def to_dict(self) -> dict[str, Any]:
        # a node popped after the cap may have been counted in ``hidden`` while its parent
        # was drawn: that is what "not broken down further" means, so it stays counted.
        return {
            "parent": self.parent,
            "label": self.label,
            "frame": self.frame,
            "value": self.value,
            "color": self.color,
            "thread": self.thread,
            "threads": self.threads,
            "total": round(self.total, 6),
            "hidden_share": round(min(1.0, self.hidden / self.total), 4),
            "max_depth": self.max_depth,
            "nodes": len(self.parent),
        }


def _merge_threads(stacks: Iterable[tuple[Sequence[str], float]]) -> list[tuple[Stack, float]]:
    """The same stacks without their thread frame: threads running the same code add up."""
    merged: dict[Stack, float] = defaultdict(float)
    for st, w in stacks:
        head = [f for f in st[:2] if ThreadFrame.parse(f) is None]
        merged[(*head, *st[2:])] += w
    return list(merged.items())


def flame_views(r: Report) -> dict[str, Any]:
    """The three flame graphs, each by thread and with threads merged, with what each
    shows, or why it is missing."""
    m = r["metrics"]
    flames = report_flames(r)
    oncpu_source = m.get("oncpu_source") or ""
    cpu_unit = "samples" if oncpu_source.startswith("perf") else "s"
    about = {
        "cpu": (
            "where threads ran on a CPU: perf's native stacks joined with py-spy's Python stacks"
            if oncpu_source == "perf+py-spy"
            else "where threads ran on a CPU: perf's native stacks"
            if oncpu_source == "perf"
            else "where threads ran on a CPU: py-spy's Python stack at the /proc ticks where the thread was running (no native frames: perf was not recorded)"
        ),
        "wall": "all Python stacks over the whole capture, running or not (py-spy): where the time of each thread went",
        "waits": "where threads blocked, by wait class (GIL, lock, I/O, from /proc) and the Python stack they blocked in",
    }
    units = {"cpu": cpu_unit, "wall": "s", "waits": "s"}
    roots = {"cpu": "all threads, on CPU", "wall": "all threads", "waits": "all waits"}
    out: dict[str, Any] = {}
    for view in FLAME_VIEWS:
        raw = flames.get(view) or []
        stacks = simplified(raw, *VARIANTS[DEFAULT_VARIANT])
        tree = flame_tree(stacks.items(), roots[view])
        out[view] = {
            "title": FLAME_VIEWS[view],
            "about": about[view],
            "unit": units[view],
            "tree": tree,
            "merged": flame_tree(_merge_threads(stacks.items()), roots[view]) if tree else None,
            "variants": _variants(raw, stacks, roots[view]) if tree else {},
            "missing": None if tree else _flame_missing(view, r, view in flames),
        }
    return out


#: the flame graph's options, "LN": L merges a function's lines, N hides interpreter frames
#: and folds long native chains; each 1 (on) or 0. The default has both on.
VARIANTS = {"11": (True, True), "10": (True, False), "01": (False, True), "00": (False, False)}
DEFAULT_VARIANT = "11"


def _variants(
    raw: Sequence[tuple[Sequence[str], float]], default: dict[Stack, float], root: str
) -> dict[str, Any]:
    """The trees of the options other than the default, where they differ from it (a
    view without native frames or lines draws the same tree either way)."""
    out: dict[str, Any] = {}
    for key, (lines, native) in VARIANTS.items():
        if key == DEFAULT_VARIANT:
            continue
        stacks = simplified(raw, lines, native)
        if stacks != default:
            out[key] = {
                "tree": flame_tree(stacks.items(), root),
                "merged": flame_tree(_merge_threads(stacks.items()), root),
            }
    return out


def _flame_missing(view: str, r: Report, recorded: bool) -> str:
    """Why ``view`` has nothing to draw; ``recorded``: the view is in the report, empty."""
    unmeasured = r["unmeasured"]
    if view == "waits":
        if recorded:
            return "no thread waited on the GIL, a lock or I/O during the capture"
        return unmeasured.get("busy_share_lock") or "thread states were not recorded"
    if view == "cpu":
        if r["metrics"].get("oncpu_samples") == 0:
            return "no on-CPU samples: the target's threads did not run during the capture"
        return unmeasured.get("oncpu_samples") or "no on-CPU stacks"
    return unmeasured.get("threads_python") or "no Python stacks were recorded"


# --- charts ----------------------------------------------------------------------------


def _layout(height: int, **extra: Any) -> dict[str, Any]:
    layout = {
        "height": height,
        "margin": {"l": 60, "r": 20, "t": 10, "b": 45},
        "font": _FONT,
        "paper_bgcolor": "#ffffff",
        "plot_bgcolor": "#ffffff",
        "hovermode": "closest",
        "legend": {"orientation": "h", "y": -0.25},
    }
    layout.update(extra)
    return layout


def _axis(title: str, **extra: Any) -> dict[str, Any]:
    return {
        "title": {"text": title},
        "gridcolor": "#eeeeee",
        "zeroline": False,
        **extra,
    }


def _short_thread(label: str, limit: int = 40) -> str:
    """'NAME (TID)' bounded, keeping the tid at the end so rows stay distinct."""
    text = plain(label, 10_000)
    if len(text) <= limit:
        return text
    head, sep, tail = text.rpartition(" (")
    if sep and tail.endswith(")"):
        return f"{head[: limit - len(tail) - 3]}… ({tail}"
    return text[: limit - 1] + "…"


def timeline_figure(tl: dict[str, Any]) -> dict[str, Any] | None:
    """Thread-state timeline: one row per thread, one cell per time bin, coloured by state."""
    if not tl or not tl.get("z") or not tl.get("t"):
        return None
    states: list[str] = list(tl["states"])
    n = len(states)
    scale: list[list[Any]] = []
    for i, s in enumerate(states):
        c = STATE_COLORS.get(s, "#999999")
        scale.append([i / n, c])
        scale.append([(i + 1) / n, c])
    z = [[None if code is None or code < 0 else int(code) for code in row] for row in tl["z"]]
    text = [
        ["" if code is None else STATE_LABELS.get(states[code], states[code]) for code in row]
        for row in z
    ]
    rows = [plotly_text(_short_thread(lab)) for lab in tl["threads"]]
    return {
        "data": [
            {
                "type": "heatmap",
                "x": tl["t"],
                "y": rows,
                "z": z,
                "text": text,
                "zmin": -0.5,
                "zmax": n - 0.5,
                "colorscale": scale,
                "showscale": False,
                "ygap": 1,
                "hovertemplate": "%{y}<br>%{x:.2f} s: %{text}<extra></extra>",
                "hoverongaps": False,
            }
        ],
        "layout": _layout(
            max(160, 50 + 16 * len(rows)),
            xaxis=_axis("seconds since the capture started"),
            yaxis={"autorange": "reversed", "automargin": True, "tickfont": {"size": 11}},
        ),
    }


def switches_figure(sw: dict[str, Any]) -> dict[str, Any] | None:
    """Context switches (voluntary, involuntary) and CPU migrations per second."""
    if not sw or not sw.get("t"):
        return None
    names = {
        "vcsw": ("voluntary switches (blocking)", "#1565c0"),
        "ivcsw": ("involuntary switches (preempted)", "#c62828"),
        "migrations": ("migrations between CPUs", "#f9a825"),
    }
    data = [
        {
            "type": "scatter",
            "mode": "lines+markers",
            "x": sw["t"],
            "y": sw[key],
            "name": label,
            "line": {"color": color, "width": 2},
            "marker": {"size": 4},
            "hovertemplate": f"{label}<br>%{{x:.0f}} s: %{{y:,.0f}}/s<extra></extra>",
        }
        for key, (label, color) in names.items()
        if sw.get(key)
    ]
    if not data:
        return None
    return {
        "data": data,
        "layout": _layout(
            300, xaxis=_axis("seconds since the capture started"), yaxis=_axis("per second")
        ),
    }


def _bucket(lo: float, hi: float) -> str:
    def f(x: float) -> str:
        return f"{x:g}"

    return f"< {f(hi)}" if lo <= 0 else f"{f(lo)}–{f(hi)}"


def runq_figure(h: dict[str, Any]) -> dict[str, Any] | None:
    """Distribution of run-queue delay (time ready to run, waiting for a core)."""
    if not h or not h.get("counts"):
        return None
    counts = [float(c or 0) for c in h["counts"]]
    total = sum(counts)
    if total <= 0:
        return None
    edges = h["edges_ms"]
    x = [_bucket(edges[i], edges[i + 1]) for i in range(len(counts))]
    shares = [round(c / total * 100, 2) for c in counts]
    return {
        "data": [
            {
                "type": "bar",
                "x": x,
                "y": shares,
                "marker": {"color": STATE_COLORS["runnable"]},
                "hovertemplate": "%{x} ms: %{y:.1f}% of timeslices<extra></extra>",
            }
        ],
        "layout": _layout(
            280,
            xaxis=_axis("run-queue delay per timeslice (ms)", type="category"),
            yaxis=_axis("% of timeslices", rangemode="tozero"),
            bargap=0.1,
        ),
    }


def cpus_figure(cpus: dict[str, Any], means: dict[str, Any]) -> dict[str, Any] | None:
    """Utilisation of each CPU over time (lines up to 16 CPUs, a heatmap beyond)."""
    if not cpus:
        return None
    order = sorted(cpus, key=lambda c: int(c) if str(c).isdigit() else 0)
    if len(order) <= 16:
        data = [
            {
                "type": "scatter",
                "mode": "lines",
                "x": cpus[c]["t"],
                "y": [None if u is None else round(u * 100, 1) for u in cpus[c]["util"]],
                "name": f"CPU {c} (mean {float(means.get(c) or 0) * 100:.0f}%)",
                "line": {"width": 1.5},
                "hovertemplate": f"CPU {c}<br>%{{x:.1f}} s: %{{y:.0f}}%<extra></extra>",
            }
            for c in order
        ]
        return {
            "data": data,
            "layout": _layout(
                300,
                xaxis=_axis("seconds since the capture started"),
                yaxis=_axis("busy %", range=[0, 105]),
            ),
        }
    t = cpus[order[0]]["t"]
    z = []
    for c in order:
        util = cpus[c]["util"]
        z.append([None if u is None else round(u * 100, 1) for u in util[: len(t)]])
    return {
        "data": [
            {
                "type": "heatmap",
                "x": t,
                "y": [f"CPU {c}" for c in order],
                "z": z,
                "zmin": 0,
                "zmax": 100,
                "colorscale": "YlOrRd",
                "colorbar": {"title": {"text": "busy %"}},
                "hovertemplate": "%{y}<br>%{x:.1f} s: %{z:.0f}%<extra></extra>",
            }
        ],
        "layout": _layout(
            max(200, 40 + 12 * len(order)),
            xaxis=_axis("seconds since the capture started"),
            yaxis={"autorange": "reversed", "automargin": True},
        ),
    }


def _why(r: Report, metric: str, fallback: str) -> str:
    reason: str = r["unmeasured"].get(metric) or fallback
    return reason


def chart_figures(r: Report) -> dict[str, Any]:
    """Each chart: its title, what it shows, the figure, or why it is missing."""
    s = r.get("series") or {}
    specs = [
        (
            "timeline",
            "Thread states over time",
            "the state each thread spent most of each time bin in (/proc schedstat and wait channels); busiest threads first",
            timeline_figure(s.get("timeline") or {}),
            _why(r, "busy_share_running", "no thread-state ticks were recorded"),
        ),
        (
            "switches",
            "Context switches and migrations per second",
            "the whole process, from /proc counters read every 5th tick",
            switches_figure(s.get("switches") or {}),
            _why(r, "ctx_switches_voluntary_per_s", "context switches were not recorded"),
        ),
        (
            "runq",
            "Run-queue delay",
            "how long a thread that was ready to run waited for a core, per timeslice"
            + (
                " (schedstat: the average per timeslice in each thread's tick interval, not per event)"
                if (s.get("runq_delay_hist") or {}).get("source") == "schedstat"
                else ""
            ),
            runq_figure(s.get("runq_delay_hist") or {}),
            _why(r, "runq_delay_p50_ms", "no thread ran during the capture"),
        ),
        (
            "cpus",
            "CPU utilisation per core",
            "busy share of each CPU, whoever used it (/proc/stat)",
            cpus_figure(s.get("cpus") or {}, s.get("cpu_mean") or {}),
            _why(r, "host_cpu_util", "per-CPU counters were not recorded"),
        ),
    ]
    return {
        key: {
            "title": title,
            "about": about,
            "figure": fig,
            "missing": None if fig else why,
        }
        for key, title, about, fig, why in specs
    }


def chart_data(r: Report) -> dict[str, Any]:
    """Everything the HTML page draws, JSON-ready, from the report dict ``r``."""
    out: dict[str, Any] = jsonable(
        {
            "flames": flame_views(r),
            "charts": chart_figures(r),
            "states": [
                {"state": s, "label": STATE_LABELS[s], "color": STATE_COLORS[s]}
                for s in STATE_COLORS
            ],
        }
    )
    return out
