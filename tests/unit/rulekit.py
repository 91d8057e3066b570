"""Hand-built metric sets for the rule tests (tests/unit/test_rules_*.py).

``healthy()`` is a busy process on a 2-core host in which no built-in rule fires: four
threads that mostly run, in code that is neither preprocessing nor the model, with no
lock, GIL, I/O or scheduling trouble, every collector present. Each test changes only
the metrics its principle is about, so a rule that fires for another reason shows up.
"""

from __future__ import annotations

from typing import Any

from diagnose.analyse.lanes import split_io
from diagnose.analyse.locks import gil_behind_locks
from diagnose.analyse.registry import known_metrics
from diagnose.verdict import load_rules
from diagnose.verdict.engine import Verdict, judge
from diagnose.verdict.expr import UNKNOWN

RULESET = load_rules()
RULES = {r.id: r for r in RULESET.rules}

HEALTHY: dict[str, Any] = {
    # host and process
    "cores_available": 2.0,
    "logical_cpus": 2,
    "physical_cores": 2,
    "cpus_usable": "0-1",
    "pin_suggestion": "with only 2 usable CPUs there is nothing to split: keep other work off cores 0-1",
    "openmp_loaded": 0,
    "pool_env_set": 0,
    "pool_threads_env": None,
    "process_cpu_cores": 1.2,
    "process_cpu_share": 0.6,
    "process_sys_share": 0.03,
    "host_cpu_util": 0.65,
    "host_other_cpu_share": 0.05,
    "process_share_of_cpu_used": 0.92,
    "tool_cpu_cores": 0.05,
    "tool_cpu_share": 0.025,
    "host_foreign_cpu_share": 0.025,
    "host_neighbour_cpu_share": 0.025,
    "host_client_cpu_share": 0.0,
    "host_service_cpu_share": 0.0,
    "host_client_names": "",
    "host_neighbour_names": "",
    "rss_mb": 300.0,
    "touched_mb": 60.0,
    "touched_to_llc": 1.9,
    "rss_growth_mb_per_min": 0.5,
    "minflt_per_s": 50.0,
    # thread time
    "threads_total": 6,
    "threads_busy": 4,
    "app_threads_busy": 4,
    "native_threads_busy": 0,
    "intra_op_threads_per_app": 1.0,
    "intra_op_suggestion": 1,
    "cpu_bound_threads": 0,
    "busy_threads_mean": 1.5,
    "cpu_demand_threads_mean": 1.3,
    "busy_share_running": 0.8,
    "busy_share_runnable": 0.1,
    "busy_share_lock": 0.04,
    "busy_share_gil": 0.03,
    "busy_share_io": 0.03,
    # two connections to a dependency, busy a third of the time, four clients
    "dep_outstanding_mean": 0.9,
    "dep_lanes": 2,
    "dep_lanes_busy": 0.33,
    "clients_active_mean": 4.0,
    "dep_queue_share": 0.5,
    "idle_share": 0.4,
    "idle_share_client": 0.0,
    "oncpu_share_spin": 0.02,
    "oncpu_share_postprocess": 0.0,
    "spin_share_contended": 0.02,
    "pool_threads": 0,
    "pool_cpu_share": 0.0,
    "pool_name": "",
    "pool_size_fix": "",
    "io_wait_top_frame": "FeatureClient.fetch (app.py:22)",
    "io_wait_top_frame_share": 0.9,
    "io_peers": "10.0.0.7:6379 (8 connections, 7 threads blocked on them)",
    "io_peer_top": "10.0.0.7:6379",
    "runq_to_oncpu_ratio": 0.125,
    "runq_delay_p99_ms": 2.0,
    "ctx_switches_voluntary_per_s": 400.0,
    "ctx_switches_involuntary_per_s": 50.0,
    "migrations_per_s": 10.0,
    "migrations_per_busy_thread_s": 2.5,
    "threads_started_per_s": 0.6,
    "threads_started_life_ms_p50": 3.0,
    "busy_share_started_threads": 0.001,
    "thread_lifecycle_cpu_share": 0.0,
    # locks and the GIL
    "lock_top_waiters": 0,
    "lock_waiters_max": 0,
    "lock_top_share": 0.0,
    "lock_top_wait_s": 0.0,
    "lock_top_address": "",
    "lock_top_site": "",
    "lock_top_library": "",
    "lock_top_pool": "",
    "lock_top_holder_site": "",
    "gil_waiters_mean": 0.05,
    "gil_waiters_max": 1,
    "gil_holder_top": "handler-0 (101)",
    "gil_holder_top_site": "handle (app.py:30)",
    "gil_holder_preprocess_share": 0.1,
    # on-CPU categories (perf and py-spy both ran)
    "oncpu_source": "perf+py-spy",
    "oncpu_share_preprocess": 0.05,
    "oncpu_share_serialisation": 0.02,
    "oncpu_share_compute": 0.1,
    "oncpu_share_array_loops": 0.0,
    "oncpu_share_other_array_loops": 0.0,
    "oncpu_top_function": "sgemm_kernel_HASWELL (libopenblas.so)",
    "compute_share_framework": 0.0,
    "oncpu_share_memory": 0.05,
    "oncpu_share_allocator": 0.02,
    "oncpu_share_model": 0.03,
    "oncpu_share_other": 0.73,
    "oncpu_share_inference": 0.18,
    "preprocess_top_function": "resize (app.py:12)",
    "preprocess_threads": 4,
    "preprocess_top_thread_share": 0.3,
    "preprocess_top_thread_stage_share": 0.3,
    "preprocess_top_thread_busy": 0.9,
    "compute_top_function": "sgemm_kernel_HASWELL (libopenblas.so)",
    "memory_top_function": "__memmove_avx_unaligned_erms (libc.so.6)",
    "model_unnamed_library": "",
    # perf c2c ran and found no contended cache line
    "c2c_lines_contended": 0,
    "c2c_hitm_load_share": 0.0,
    "c2c_top_line_address": "",
    "c2c_top_line_hitm_share": 0.0,
    "c2c_top_line_offsets": 0,
    "c2c_top_line_threads": 0,
    "c2c_top_line_symbols": "",
    # the false_sharing collector (sampled registers) ran and found no shared line
    "false_sharing_lines": 0,
    "false_sharing_share": 0.0,
    "false_sharing_top_line": "",
    "false_sharing_top_share": 0.0,
    "false_sharing_top_offsets": 0,
    "false_sharing_top_threads": 0,
    "false_sharing_top_site": "",
    "true_sharing_lines": 0,
    "true_sharing_share": 0.0,
    "true_sharing_top_address": "",
    "true_sharing_top_share": 0.0,
    "true_sharing_top_threads": 0,
    "true_sharing_top_site": "",
    "false_sharing_coverage": 0.97,
    "false_sharing_c2c_agrees": None,
}


def healthy(**changes: Any) -> dict[str, Any]:
    """Every registered metric (unmeasured unless set), the healthy values, then ``changes``."""
    m: dict[str, Any] = dict.fromkeys(known_metrics())
    m.update(HEALTHY)
    m.update(changes)
    # metrics the analysis derives from others, derived the same way unless a test sets them
    derived = _derived(m)
    m.update({k: v for k, v in derived.items() if k not in changes})
    if "stage_cpu_share" not in changes:  # a process alone: its service is its stage
        m["stage_cpu_share"] = m["service_cpu_share"]
    unknown = set(m) - set(known_metrics())
    assert not unknown, f"not registered metrics: {unknown}"
    return m


def _derived(m: dict[str, Any]) -> dict[str, Any]:
    """As analyse/host.py, analyse/locks.py and analyse/oncpu.py compute them
    (busy_share_gil_all by the analysis' own function)."""
    held_gil = m.get("lock_top_holder_gil_wait_share")
    lock = m.get("lock_top_share") or 0.0
    service = m.get("process_cpu_share")
    out = {
        "service_processes": 1,
        "service_cpu_share": None
        if service is None
        else service + (m.get("host_service_cpu_share") or 0.0),
        "lock_top_share_net": lock * (1 - (held_gil or 0.0)),
        "busy_share_gil_all": None,
    }
    # no stage sample in a kernel: each kernel's share in any stage is its share in the model
    for kernel in ("compute", "memory", "allocator"):
        out[f"kernel_share_{kernel}"] = m.get(f"oncpu_share_{kernel}")
    # a process alone is a service of one (analyse/service.py: lone_process)
    for own in ("cpu_bound_threads", "app_threads_busy", "native_threads_busy"):
        out[f"service_{own}"] = m.get(own)
    gil = {
        k: m.get(k) for k in ("busy_share_gil", "lock_top_share", "lock_top_holder_gil_wait_share")
    }
    gil_behind_locks(gil)
    out["busy_share_gil_all"] = gil.get("busy_share_gil_all")
    keys = ("busy_share_io", "busy_share_io_loop", "dep_lanes_busy", "dep_queue_share")
    io = {k: m.get(k) for k in keys}
    split_io(io)
    out["busy_share_dep_queue"] = io.get("busy_share_dep_queue")
    out["busy_share_io_dependency"] = io.get("busy_share_io_dependency")
    return out


def when(rule_id: str, metrics: dict[str, Any]) -> Any:
    """True, False or UNKNOWN: the rule's condition over ``metrics``."""
    return RULES[rule_id].when(metrics)


def fired(metrics: dict[str, Any]) -> set[str]:
    return {rid for rid, r in RULES.items() if r.when(metrics) is True}


def verdict(metrics: dict[str, Any], partial: set[str] | None = None) -> Verdict:
    unmeasured = {k: "not measured in this test" for k, v in metrics.items() if v is None}
    return judge(RULESET, metrics, unmeasured, partial)


def expect(metrics: dict[str, Any], primary: str, kind: str | None) -> Verdict:
    """The verdict over ``metrics``, asserted to be ``primary`` (``kind``)."""
    v = verdict(metrics)
    assert (v.primary, v.kind) == (primary, kind), (v.primary, v.kind, v.confidence_notes)
    return v


__all__ = ["HEALTHY", "RULES", "UNKNOWN", "expect", "fired", "healthy", "verdict", "when"]
