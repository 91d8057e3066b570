"""The dependencies a service waits on, by address: its outbound TCP connections read from
/proc (collect/proctree.py ``outbound_peers``, real sockets of this process) and the
``io_peers`` the I/O finding names (analyse/host.py, hand-built system.json)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator

import pytest

from diagnose.analyse import host
from diagnose.collect.proctree import outbound_peers
from tests.unit.analysis import bundle_data, run


@pytest.fixture
def dependency() -> Iterator[tuple[int, socket.socket, socket.socket]]:
    """A listening socket of this process (its port), a connection this process opened to
    it, and the end it accepted."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    opened = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    try:
        yield port, opened, accepted
    finally:
        for s in (opened, accepted, listener):
            s.close()


def blocked_in_recv(sock: socket.socket) -> threading.Thread:
    """A thread blocked in recv() on ``sock`` (it ends when the socket gets a byte)."""
    t = threading.Thread(target=sock.recv, args=(1,), daemon=True)
    t.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:  # until the kernel shows it in its system call
        with open(f"/proc/self/task/{t.native_id}/syscall") as fh:
            if fh.read().split()[0].isdigit():
                return t
        time.sleep(0.01)
    raise AssertionError("the thread never blocked in recv")


def test_the_connections_a_process_opened_are_named_by_peer_with_their_waiting_threads(
    dependency,
):
    port, opened, accepted = dependency
    # GIVEN a thread blocked reading the connection this process opened
    waiter = blocked_in_recv(opened)
    peers = outbound_peers(os.getpid())
    # THEN its peer is listed, with the thread blocked on it
    assert peers is not None
    mine = [p for p in peers if p["peer"] == f"127.0.0.1:{port}"]
    assert mine == [{"peer": f"127.0.0.1:{port}", "connections": 1, "threads_waiting": 1}]
    assert peers[0] == mine[0]  # the most waited on first
    # near miss: the end it accepted (local port: the one it listens on) is no dependency
    client_port = opened.getsockname()[1]
    assert not [p for p in peers if p["peer"] == f"127.0.0.1:{client_port}"]
    accepted.sendall(b"x")
    waiter.join(5)
    # and once nothing waits on it, it is still a connection, with no thread waiting
    (now,) = [p for p in outbound_peers(os.getpid()) or [] if p["peer"] == f"127.0.0.1:{port}"]
    assert now["threads_waiting"] == 0 and now["connections"] == 1


def test_a_closed_connection_is_gone_and_an_exited_process_is_not_read(dependency):
    port, opened, _ = dependency
    opened.close()
    assert not [p for p in outbound_peers(os.getpid()) or [] if p["peer"].endswith(f":{port}")]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()  # reaped: its PID names no process
    assert outbound_peers(gone.pid) is None  # not "no connections": not read at all


def test_the_io_finding_names_the_dependencies_it_was_connected_to():
    outbound = [
        {"peer": "10.0.0.7:6379", "connections": 8, "threads_waiting": 7},
        {"peer": "[2001:db8::5]:5432", "connections": 1, "threads_waiting": 0},
        {"peer": "10.0.0.9:443", "connections": 2, "threads_waiting": 0},
        {"peer": "10.0.0.10:80", "connections": 1, "threads_waiting": 0},
    ]
    m = run(bundle_data(system={"outbound": outbound}), host.system_metrics).metrics
    assert m["io_peer_top"] == "10.0.0.7:6379"
    assert m["io_peers"] == (
        "10.0.0.7:6379 (8 connections, 7 threads blocked on them); "
        "[2001:db8::5]:5432 (1 connection); 10.0.0.9:443 (2 connections)"
    )  # the first three, as written (most waited on first)
    m = run(bundle_data(system={"outbound": []}), host.system_metrics).metrics
    assert (m["io_peers"], m["io_peer_top"]) == ("none", "")
    # not read (the target had exited) or a bundle of before: not measured, never "none"
    for system in ({"outbound": None}, {"cpu": {}}):
        m = run(bundle_data(system=system), host.system_metrics).metrics
        assert "io_peers" not in m and "io_peer_top" not in m


def test_malformed_entries_of_a_bundle_from_elsewhere_are_skipped():
    outbound = [
        "10.0.0.1:1",
        {"peer": "x" * 65, "connections": 1, "threads_waiting": 0},
        {"peer": "10.0.0.2:2", "connections": True, "threads_waiting": 0},
        {"peer": "10.0.0.3:3", "connections": -1, "threads_waiting": 0},
        {"peer": "", "connections": 1, "threads_waiting": 0},
        {"peer": "10.0.0.4:4", "connections": 1, "threads_waiting": 1},
    ]
    m = run(bundle_data(system={"outbound": outbound}), host.system_metrics).metrics
    assert m["io_peers"] == "10.0.0.4:4 (1 connection, 1 thread blocked on it)"
