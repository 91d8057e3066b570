"""Which process diagnose captures, on the zoo's real serving stacks (samples/services/).

diagnose attach is pointed at the PID a user has: the service's own. A threaded service
with a helper child (the feature store, a server of its own) is diagnosed itself, however
busy the child; a gunicorn or uvicorn ``--workers 2`` master leads to one of its workers,
and the manifest and report say which process, why, and who was left out and why. The
decision reads the process tree's structure (listening sockets, command lines, what the
threads wait on), so the contrasts here do not depend on CPU use and hold on a busy host.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from benchmarks.zoo import Running, free_port, running, select, start_load
from diagnose.collect.proctree import read_tree
from tests.conftest import require_locust
from tests.e2e.cli import run_cli, wait_for
from tests.e2e.safety import wait_no_helpers

PROC_ONLY = ("--collectors", "proc")


def attach(run: Running | int, out: Path, *extra: str) -> tuple[dict, dict, str]:
    """``diagnose attach`` on the PID the service's command started: (manifest target,
    report.json, what the terminal showed, on one line)."""
    pid = run if isinstance(run, int) else run.pid
    res = run_cli(
        "attach", str(pid), "-d", "2", *PROC_ONLY, "--format", "json,md", "-o", str(out), *extra
    )
    assert res.returncode in (0, 5), res.stderr
    target = json.loads((out / "manifest.json").read_text())["target"]
    report = json.loads((out / "report.json").read_text())
    # the selection's note is in the summary (wrapped to the terminal's width), once
    return target, report, " ".join((res.stdout + res.stderr).split())


def test_a_threaded_service_with_a_helper_child_is_diagnosed_itself(tmp_path: Path):
    require_locust()
    # GIVEN the fraud-scoring service under load: 8 request threads blocked on its feature
    # store, a child process listening on a port of its own
    s = select(["threaded_featurestore_child"])[0]
    with running(s, None, tmp_path / "svc") as run:
        store = psutil.Process(run.pid).children()
        assert len(store) == 1, store
        comm = store[0].name()  # python or python3: the name of the interpreter that runs it
        (port,) = {c.laddr.port for c in store[0].net_connections("tcp") if c.status == "LISTEN"}
        load = start_load(run, 30, tmp_path / "svc")
        try:
            # the service's own threads are seen waiting on TCP connections (the store's),
            # and it holds the connections it accepted from the load generator
            def serving() -> bool:
                tree = read_tree(run.pid, 0)
                return tree.request_threads >= 4 and tree.accepted >= 4

            wait_for(serving, 30, "request threads and accepted connections")
            # WHEN diagnose attaches to the service's PID
            target, report, err = attach(run, tmp_path / "b")
        finally:
            load.stop()
    # THEN the service itself is captured, not its child, and the child is named as left
    # out because it serves on a port of its own
    assert target["pid"] == run.pid and target["followed_from"] is None, target
    assert target["selection"] == "service", target
    assert target["left_out"] == [
        {"pid": store[0].pid, "comm": comm, "why": target["left_out"][0]["why"]}
    ]
    assert "a server of its own" in target["left_out"][0]["why"]
    assert f"PID {run.pid} serves requests itself" in target["note"]
    # and the report and the terminal say so
    assert report["target"]["note"] == target["note"]
    assert f"Left out: {store[0].pid} ({comm})" in err
    assert f"Left out: {store[0].pid} ({comm})" in (tmp_path / "b" / "report.md").read_text()
    # and the dependency it waits on is named by its address: the store's port, the only
    # peer of the connections the service opened (the load's connections it accepted are not)
    assert report["metrics"]["io_peer_top"] == f"127.0.0.1:{port}", report["metrics"]
    assert report["metrics"]["io_peers"].startswith(f"127.0.0.1:{port} ("), report["metrics"]
    assert "; " not in report["metrics"]["io_peers"]
    peers = json.loads((tmp_path / "b" / "system.json").read_text())["outbound"]
    assert [p["peer"] for p in peers] == [f"127.0.0.1:{port}"] and peers[0]["connections"] >= 1
    io = [f for f in report["findings"] if f["id"] == "io.waits_on_dependencies"]
    assert io, [f["id"] for f in report["findings"]]
    assert f"its outbound connections as the capture ended: 127.0.0.1:{port} (" in io[0]["summary"]
    # and the load generator on this host is known for what it is: the service's client
    others = {p["pid"]: p for p in report["extra"]["host_processes"]}
    assert others[load.proc.pid]["role"] == "client", others
    assert report["metrics"]["host_client_cpu_share"] > 0


def prefork_workers(run: Running) -> set[int]:
    """The workers on the master's listening socket, once both booted."""

    def listening() -> set[int]:  # workers share the master's socket once they boot
        pids = set()
        for k in psutil.Process(run.pid).children():
            with contextlib.suppress(psutil.Error):
                if k.net_connections("tcp"):
                    pids.add(k.pid)
        return pids

    # the service answers once one worker runs; on a loaded host the second boots later
    wait_for(lambda: len(listening()) == 2, 60, "both workers on the socket")
    workers = listening()
    assert len(workers) == 2, psutil.Process(run.pid).children()
    return workers


@pytest.mark.parametrize(
    ("sample", "master"),
    [("gunicorn_idle", "a gunicorn master"), ("uvicorn_workers2_textclean", "a uvicorn master")],
)
def test_a_prefork_master_leads_to_its_busiest_worker_with_workers_busiest(
    tmp_path: Path, sample: str, master: str
):
    # GIVEN a pre-fork server started as its users start it: the PID is the master's
    s = select([sample])[0]
    with running(s, None, tmp_path / "svc") as run:
        workers = prefork_workers(run)
        kids = psutil.Process(run.pid).children()
        # WHEN diagnose attaches to the master, asked for the busiest worker only
        target, report, err = attach(run, tmp_path / "b", "--workers", "busiest")
    # THEN one of its workers is captured, the master named as followed
    assert target["pid"] in workers and target["followed_from"] == run.pid, target
    assert target["selection"] == "prefork", target
    assert f"PID {run.pid} is {master}" in target["note"]
    assert f"following the busiest, PID {target['pid']}" in target["note"]
    # and the other worker (and uvicorn's resource tracker) are left out, each with why
    left = {x["pid"]: x["why"] for x in target["left_out"]}
    (other,) = workers - {target["pid"]}
    assert left[other].startswith("another worker of the service"), left
    assert set(left) == {k.pid for k in kids} - {target["pid"]}, left
    assert report["target"]["note"] == target["note"]
    assert "following the busiest" in err
    assert report["service"] == {} and not (tmp_path / "b" / "workers").exists()
    # the whole note, its last left-out process included, reaches the Markdown report
    md = (tmp_path / "b" / "report.md").read_text()
    last = target["left_out"][-1]
    assert f"{last['pid']} ({last['comm']})" in md, md[:2000]


def test_a_prefork_master_leads_to_all_its_workers_by_default(tmp_path: Path):
    # GIVEN gunicorn with two sync workers, started as its users start it
    s = select(["gunicorn_idle"])[0]
    with running(s, None, tmp_path / "svc") as run:
        workers = prefork_workers(run)
        # WHEN diagnose attaches to the master with its defaults
        target, report, err = attach(run, tmp_path / "b")
        # (near miss: a PID given to --workers that is not one of them: exit 3, nothing kept)
        res = run_cli("attach", str(run.pid), "--workers", str(run.pid), "-o", str(tmp_path / "c"))
        assert res.returncode == 3, res.stderr
        assert f"--workers: PID {run.pid} is not a worker of this service" in res.stderr
        assert not (tmp_path / "c").exists()
    # THEN both workers are captured: one in the bundle, the other in workers/PID/
    (other,) = workers - {target["pid"]}
    assert target["pid"] in workers and target["followed_from"] == run.pid, target
    assert f"capturing 2 workers ({target['pid']}, {other}) at once" in target["note"]
    assert other not in {x["pid"] for x in target.get("left_out", [])}
    assert "capturing 2 workers" in err
    assert other in target["siblings"], target  # the service's processes: both workers
    runs = json.loads((tmp_path / "b" / "workers.json").read_text())["workers"]
    assert runs == [{"pid": other, "dir": f"workers/{other}", "status": "ok", "reason": ""}]
    sub = json.loads((tmp_path / "b" / "workers" / str(other) / "manifest.json").read_text())
    assert sub["state"] == "complete" and sub["target"]["pid"] == other
    assert target["pid"] in sub["target"]["siblings"]
    # and each worker is judged (idle, both), with one verdict for the service, and the
    # other worker's own reports are in its bundle
    rows = report["service"]["workers"]
    assert [(r["pid"], r["this"]) for r in rows] == [(target["pid"], True), (other, False)]
    assert [r["primary"] for r in rows] == ["idle", "idle"], rows
    assert report["service"]["verdict"]["primary"] == "idle"
    assert report["service"]["verdict"]["agree"] is True
    # what the two captures cost while their windows were open, each measured, and summed
    window = [r["tool_window_cores"] for r in rows]
    assert all(isinstance(w, float) and w > 0 for w in window), rows
    assert report["service"]["tool_cpu_window_cores"] == pytest.approx(sum(window), abs=0.002)
    assert (tmp_path / "b" / "workers" / str(other) / "report.md").is_file()
    assert "**Service of 2 workers:** Idle" in (tmp_path / "b" / "report.md").read_text()
    # no capture of either worker is left behind
    assert not worker_captures(workers)


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_the_workers_captures_share_the_scheduler_traces_event_budget(tmp_path: Path):
    # GIVEN gunicorn with two workers, captured with the scheduler trace
    s = select(["gunicorn_idle"])[0]
    with running(s, None, tmp_path / "svc") as run:
        res = run_cli(
            "attach", str(run.pid), "-d", "2", "--collectors", "proc,perf_sched", "--no-report",
            "-o", str(tmp_path / "b"),
        )  # fmt: skip
    assert res.returncode in (0, 5), res.stderr
    (other,) = json.loads((tmp_path / "b" / "workers.json").read_text())["workers"]
    # THEN each capture converts half the 30,000 events one capture would: their conversions
    # run side by side after the window
    for bundle in (tmp_path / "b", tmp_path / "b" / other["dir"]):
        man = json.loads((bundle / "manifest.json").read_text())
        assert man["collectors"]["perf_sched"]["details"]["event_budget"] == 15_000, man
    # and the worker's perf ran with the poll() fix the service's capture built, handed down
    # (where that capture built one: a host with a C compiler)
    parent, child = (
        json.loads((b / "manifest.json").read_text())["collectors"]["perf_sched"]["details"]
        for b in (tmp_path / "b", tmp_path / "b" / other["dir"])
    )
    # (the service's capture built it or copied it from diagnose's cache)
    assert parent.get("poll_fix_built_by", "an earlier run (cached)") == "an earlier run (cached)"
    if parent["poll_fix"] == "preloaded":
        assert child["poll_fix"] == "preloaded" and child["kallsyms"] == parent["kallsyms"]
        assert child["poll_fix_built_by"] == "the service's capture", child
    # near miss: a budget given is each capture's own
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        res = run_cli(
            "attach", str(proc.pid), "-d", "1", "--collectors", "proc,perf_sched",
            "--no-report", "--sched-events", "40000", "-o", str(tmp_path / "c"),
        )  # fmt: skip
    finally:
        proc.kill()
        proc.wait()
    man = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert man["collectors"]["perf_sched"]["details"]["event_budget"] == 40_000, man


def worker_captures(pids: set[int]) -> list[list[str]]:
    """Live ``diagnose attach PID`` processes aimed at one of ``pids``."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        argv = p.info["cmdline"] or []
        if "attach" in argv and any(str(pid) in argv for pid in pids) and "diagnose" in argv:
            out.append(argv)
    return out


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL])
def test_stopping_diagnose_stops_every_workers_capture(tmp_path: Path, sig: signal.Signals):
    # GIVEN a 60 s capture of gunicorn's two workers, with py-spy on each
    s = select(["gunicorn_idle"])[0]
    out = tmp_path / "b"
    with running(s, None, tmp_path / "svc") as run:
        workers = prefork_workers(run)
        proc = subprocess.Popen(
            [sys.executable, "-m", "diagnose", "attach", str(run.pid), "-d", "60", "-o", str(out),
             "--collectors", "proc,pyspy", "--format", "json"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            wait_for(lambda: len(worker_captures(workers)) == 1, 30, "the other worker's capture")
            wait_for(
                lambda: (
                    _recording(out) and any(_recording(out / "workers" / str(p)) for p in workers)
                ),
                30,
                "both captures recording",
            )
            # WHEN diagnose is interrupted (Ctrl-C) or killed
            proc.send_signal(sig)
            _, stderr = proc.communicate(timeout=60)
            # THEN the other worker's capture ends too, and no py-spy is left on either
            wait_for(lambda: not worker_captures(workers), 20, "the worker's capture to end")
            for pid in workers:
                assert not wait_no_helpers(pid, 10), pid
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    if sig == signal.SIGINT:
        # and, interrupted, it kept both bundles, each complete, and judged both
        assert proc.returncode in (0, 5), stderr
        report = json.loads((out / "report.json").read_text())
        assert report["capture"]["ended_by"].startswith("interrupted"), report["capture"]
        # (partial where a collector had too little time: what it had is kept)
        rows = report["service"]["workers"]
        assert all(r["status"] in ("ok", "partial") for r in rows), report["service"]
        assert all(r["primary"] is not None for r in rows), report["service"]
        (other,) = workers - {report["target"]["pid"]}
        sub = json.loads((out / "workers" / str(other) / "manifest.json").read_text())
        assert sub["state"] == "complete" and sub["capture"]["ended_by"].startswith("interrupted")


def _recording(out: Path) -> bool:
    with contextlib.suppress(OSError, ValueError):
        cap = json.loads((out / "manifest.json").read_text())["capture"]
        return cap.get("window_start_s") is not None
    return False


LAUNCHER = """
import subprocess, sys, time
child = subprocess.Popen(sys.argv[1:])
while child.poll() is None:
    time.sleep(0.2)
"""


def test_an_idle_launcher_polling_its_serving_child_is_followed_to_it(tmp_path: Path):
    # GIVEN a Python launcher that started an HTTP server and polls it in a sleep loop (so
    # it never waits in wait4, and is not a shell)
    port = free_port()
    server = [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1"]
    launcher = subprocess.Popen(
        [sys.executable, "-c", LAUNCHER, *server],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:

        def listening() -> bool:
            kids = psutil.Process(launcher.pid).children()
            return bool(kids) and any(c.status == "LISTEN" for c in kids[0].net_connections())

        wait_for(listening, 30, "the HTTP server")
        (child,) = psutil.Process(launcher.pid).children()
        # WHEN diagnose attaches to the launcher
        target, _report, err = attach(launcher.pid, tmp_path / "b")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
    # THEN the server is captured, and the note says the launcher was followed and why
    assert target["pid"] == child.pid and target["followed_from"] == launcher.pid, target
    assert target["selection"] == "wrapper", target
    assert f"PID {launcher.pid} is a launcher" in target["note"]
    assert f"following PID {child.pid}" in err


STORE_SERVER = """
import socket, sys
srv = socket.create_server(("127.0.0.1", int(sys.argv[1])))
held = []
while True:
    held.append(srv.accept()[0])
"""
FRONT_SERVER = """
import http.server, socket, sys, time
for _ in range(100):  # the store starts beside it
    try:
        store = socket.create_connection(("127.0.0.1", int(sys.argv[2])))
        break
    except OSError:
        time.sleep(0.1)
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), http.server.BaseHTTPRequestHandler).serve_forever()
"""
TWO_LAUNCHER = """
import subprocess, sys, time
front, store = sys.argv[1], sys.argv[2]
kids = [subprocess.Popen([sys.executable, "-c", sys.argv[3], store]),
        subprocess.Popen([sys.executable, "-c", sys.argv[4], front, store])]
while all(k.poll() is None for k in kids):
    time.sleep(0.2)
"""


def test_a_launcher_of_a_server_and_its_store_is_followed_to_the_server(tmp_path: Path):
    # GIVEN a launcher that starts a TCP store and a server that connects to it (blind batch
    # 15's s07: gunicorn and its feature store under a sleeping launcher was read as idle)
    front, store = free_port(), free_port()
    launcher = subprocess.Popen(
        [sys.executable, "-c", TWO_LAUNCHER, str(front), str(store), STORE_SERVER, FRONT_SERVER],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    try:

        def both_up() -> bool:
            kids = psutil.Process(launcher.pid).children()
            ports = {
                c.laddr.port for k in kids for c in k.net_connections() if c.status == "LISTEN"
            }
            conns = [
                c for k in kids for c in k.net_connections() if c.raddr and c.raddr.port == store
            ]
            return {front, store} <= ports and bool(conns)

        wait_for(both_up, 30, "the server and its store")
        by_port = {
            c.laddr.port: k.pid
            for k in psutil.Process(launcher.pid).children()
            for c in k.net_connections()
            if c.status == "LISTEN"
        }
        target, _report, err = attach(launcher.pid, tmp_path / "two")
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(launcher.pid, signal.SIGKILL)
        launcher.wait(10)
    # THEN the server is captured, the store named as its dependency, the launcher followed
    assert target["pid"] == by_port[front] and target["followed_from"] == launcher.pid, target
    assert f"PID {launcher.pid} is a launcher" in target["note"], target["note"]
    assert re.search(
        rf"{by_port[store]} \(python[\d.]*\): a dependency of {by_port[front]} ", target["note"]
    ), target["note"]
    assert f"following PID {by_port[front]}" in err
