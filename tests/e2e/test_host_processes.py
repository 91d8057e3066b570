"""The host scan on real processes (collect/hostprocs.py): a service listening on a port, a
pre-fork child holding the same listening socket, a client connected to the port, and an
unrelated neighbour, each using CPU; every one gets its role from its sockets."""

from __future__ import annotations

import subprocess
import sys
import time

import pytest

from diagnose.collect.hostprocs import HostScan

SPIN = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass\n"
SERVER = (
    "import os, socket, sys, time\n"
    "s = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen(16)\n"
    "print(s.getsockname()[1], flush=True)\n"
    "child = os.fork()\n"  # the pre-fork worker: holds the listening socket too
    "if child == 0:\n"
    "    end = time.monotonic() + 60\n"
    "    while time.monotonic() < end: pass\n"
    "    os._exit(0)\n"
    "print(child, flush=True)\n"
    "time.sleep(60)\n"
)
CLIENT = (
    "import socket, sys, time\n"
    "c = socket.create_connection(('127.0.0.1', int(sys.argv[1])))\n"
    "print('connected', flush=True)\n" + SPIN
)


@pytest.fixture
def processes():
    started: list[subprocess.Popen[str]] = []

    def start(code: str, *args: str) -> subprocess.Popen[str]:
        p = subprocess.Popen([sys.executable, "-c", code, *args], stdout=subprocess.PIPE, text=True)
        started.append(p)
        return p

    yield start
    for p in started:
        p.kill()
        p.wait()


def test_each_process_gets_its_role_from_its_sockets(processes):
    server = processes(SERVER)
    assert server.stdout is not None
    port = server.stdout.readline().strip()
    worker = int(server.stdout.readline())
    client = processes(CLIENT, port)
    assert client.stdout is not None and client.stdout.readline().strip() == "connected"
    neighbour = processes(SPIN)
    scan = HostScan(server.pid)
    assert scan.ports == {int(port)}
    first = scan.scan(0.0, [])
    assert {r[1] for r in first} >= {worker, client.pid, neighbour.pid}
    assert server.pid not in {r[1] for r in first}  # the target is measured elsewhere
    time.sleep(0.5)  # each of the three spins meanwhile
    later = {r[1]: r for r in scan.scan(1.0, [neighbour.pid + 10**7])}
    roles = {pid: later[pid][4] for pid in (worker, client.pid, neighbour.pid)}
    assert roles == {worker: "service", client.pid: "client", neighbour.pid: "other"}
    assert later[client.pid][3] > first[[r[1] for r in first].index(client.pid)][3]


def test_what_is_excluded_is_not_scanned(processes):
    neighbour = processes(SPIN)
    scan = HostScan(neighbour.pid + 10**7)  # no such target: no ports, nothing listens
    assert scan.ports == set()
    rows = scan.scan(0.0, [neighbour.pid])
    assert neighbour.pid not in {r[1] for r in rows}


def test_a_target_that_serves_no_port_reads_no_ones_sockets(processes, monkeypatch):
    # GIVEN a target that listens on nothing, and a neighbour using CPU
    target = processes("import time\ntime.sleep(60)\n")
    neighbour = processes(SPIN)
    scan = HostScan(target.pid)
    assert scan.listen_inodes == set()
    read: list[int] = []
    monkeypatch.setattr(
        "diagnose.collect.hostprocs.socket_inodes", lambda pid: read.append(pid) or set()
    )
    scan.scan(0.0, [])
    time.sleep(0.3)
    later = {r[1]: r for r in scan.scan(1.0, [])}
    # THEN every process is a neighbour, told without opening any process's descriptors
    assert later[neighbour.pid][4] == "other"
    assert read == []


def test_a_pipelines_other_stages_are_the_service_whatever_they_listen_on(processes):
    # GIVEN a stage of a pipeline that listens on nothing, the stage beside it (selection
    # found it: a sibling), and a neighbour, both using CPU
    target = processes("import time\ntime.sleep(60)\n")
    stage, neighbour = processes(SPIN), processes(SPIN)
    scan = HostScan(target.pid, service=[stage.pid])
    first = {r[1]: r for r in scan.scan(0.0, [])}
    time.sleep(0.3)
    later = {r[1]: r for r in scan.scan(1.0, [])}
    # THEN the sibling's CPU is the service's from the first scan on, the neighbour's not
    assert first[stage.pid][4] == later[stage.pid][4] == "service"
    assert later[neighbour.pid][4] == "other"
