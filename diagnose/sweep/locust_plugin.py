"""Loaded by locust next to the user's locustfile (``locust -f USERFILE,THIS``); never by diagnose.

It turns one locust run into one measured step of a sweep, with locust's own statistics:
once every user is spawned, it waits the warm-up and writes ``warm.json``; when diagnose
has its collectors running it creates ``go``; then the plugin resets locust's statistics,
writes ``measuring.json`` (the window's start), waits the window, writes ``window.json``
(locust's figures for exactly that window) and ends the run. Configured by environment
variables:

- ``DIAGNOSE_SWEEP_DIR``: where the two files go;
- ``DIAGNOSE_SWEEP_WARMUP``, ``DIAGNOSE_SWEEP_WINDOW``: seconds.

Without ``DIAGNOSE_SWEEP_DIR`` it does nothing, so a locustfile that imports it still runs
on its own. It imports nothing from diagnose (it runs in locust's process and interpreter).
"""

from __future__ import annotations

import json
import os
import time
from typing import Any

import gevent
from locust import events

_DIR = os.environ.get("DIAGNOSE_SWEEP_DIR", "")
_STATE: dict[str, Any] = {"started": False, "environment": None}


def _write(name: str, data: dict[str, Any]) -> None:
    path = os.path.join(_DIR, name)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(data, fh)
    os.replace(tmp, path)


def _percentiles(entry: Any) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, q in (("p50_ms", 0.5), ("p95_ms", 0.95), ("p99_ms", 0.99)):
        out[key] = entry.get_response_time_percentile(q) if entry.num_requests else None
    return out


def _snapshot(runner: Any, seconds: float, users_at_start: int) -> dict[str, Any]:
    stats = runner.stats
    total = stats.total
    endpoints = []
    for entry in sorted(stats.entries.values(), key=lambda e: -e.num_requests)[:20]:
        endpoints.append(
            {
                "name": str(entry.name)[:200],
                "method": str(entry.method)[:20],
                "requests": entry.num_requests,
                "failures": entry.num_failures,
                **_percentiles(entry),
            }
        )
    errors = [
        {"error": str(err.error)[:300], "name": str(err.name)[:200], "count": err.occurrences}
        for err in sorted(stats.errors.values(), key=lambda e: -e.occurrences)[:10]
    ]
    return {
        "tool": "locust",
        "seconds": round(seconds, 4),
        "users_at_start": users_at_start,
        "users_at_end": runner.user_count,
        "requests": total.num_requests,  # locust counts failed requests here too
        "failures": total.num_failures,
        "mean_ms": total.avg_response_time if total.num_requests else None,
        "max_ms": total.max_response_time if total.num_requests else None,
        **_percentiles(total),
        "endpoints": endpoints,
        "errors": errors,
        "cpu_warning": bool(getattr(runner, "cpu_warning_emitted", False)),
    }


def _measure(environment: Any) -> None:
    runner = environment.runner
    warmup = float(os.environ.get("DIAGNOSE_SWEEP_WARMUP", "0"))
    window = float(os.environ.get("DIAGNOSE_SWEEP_WINDOW", "10"))
    gevent.sleep(warmup)
    _write("warm.json", {"wall": time.time(), "users": runner.user_count})
    go = os.path.join(_DIR, "go")
    while not os.path.exists(go):  # diagnose's collectors are starting; locust's -t bounds this
        gevent.sleep(0.02)
    runner.stats.reset_all()
    started = time.monotonic()
    users = runner.user_count
    _write("measuring.json", {"wall": time.time(), "users": users})
    gevent.sleep(window)
    _write("window.json", _snapshot(runner, time.monotonic() - started, users))
    runner.quit()


if _DIR:

    def _on_init(environment: Any, **_kw: Any) -> None:
        _STATE["environment"] = environment

    def _on_spawned(user_count: int, **_kw: Any) -> None:
        if _STATE["started"] or _STATE.get("environment") is None:
            return
        _STATE["started"] = True
        gevent.spawn(_measure, _STATE["environment"])

    events.init.add_listener(_on_init)
    events.spawning_complete.add_listener(_on_spawned)
