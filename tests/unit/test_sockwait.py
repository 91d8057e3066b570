"""Which way the sockets a blocked thread waits on face (collect/sockwait.py), read from this
very process: threads blocked in recv, in poll (a socket with a timeout), in select and in
epoll, on a connection they made (a dependency: "out") or one the process accepted on its
own listening port (its client: "in"); and a child's pipe fed from outside it (its input)."""

from __future__ import annotations

import contextlib
import os
import select
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from diagnose.collect import sockwait
from diagnose.collect.sockwait import WaitedSockets


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket, socket.socket]]:
    """(listening, connected from here: outbound, accepted here: inbound)."""
    listener = socket.create_server(("127.0.0.1", 0))
    out = socket.create_connection(listener.getsockname())
    inbound, _ = listener.accept()
    yield listener, out, inbound
    for s in (out, inbound, listener):
        s.close()


def blocked(wait: Callable[[], object]) -> tuple[int, str]:
    """A thread blocked in ``wait()``: (its TID, its /proc syscall line once it blocks)."""
    tid: list[int] = []

    def run() -> None:
        tid.append(threading.get_native_id())
        with contextlib.suppress(OSError, ValueError):
            wait()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    deadline = time.monotonic() + 5
    text = ""
    while time.monotonic() < deadline:
        if tid:
            text = _syscall(tid[0])
            if text and text.split()[0].isdigit():
                break
        time.sleep(0.01)
    return tid[0], text


def _syscall(tid: int) -> str:
    with open(f"/proc/self/task/{tid}/syscall") as fh:
        return fh.read().strip()


def direction_of(wait: Callable[[], object]) -> str:
    tid, text = blocked(wait)
    return WaitedSockets(os.getpid()).of_thread(tid, text)


def test_a_recv_with_a_timeout_on_a_connection_made_is_out(pair):
    _, out, _ = pair
    out.settimeout(30)  # CPython then waits in poll(), not in recv()
    assert direction_of(lambda: out.recv(10)) == "out"


def test_a_plain_recv_on_a_connection_made_is_out(pair):
    _, out, _ = pair
    assert direction_of(lambda: out.recv(10)) == "out"


def test_a_recv_on_an_accepted_connection_is_in(pair):
    _, _, inbound = pair
    inbound.settimeout(30)
    assert direction_of(lambda: inbound.recv(10)) == "in"


def test_select_over_outbound_sockets_only_is_out(pair):
    _, out, _ = pair
    assert direction_of(lambda: select.select([out], [], [], 30)) == "out"


def test_an_epoll_over_a_dependency_is_out(pair):
    _, out, _ = pair
    ep = select.epoll()
    ep.register(out.fileno(), select.EPOLLIN)
    try:
        assert direction_of(lambda: ep.poll(30)) == "out"
    finally:
        ep.close()


def test_a_wait_that_is_not_on_a_socket_says_nothing():
    r, w = os.pipe()
    try:
        assert direction_of(lambda: os.read(r, 1)) == ""
    finally:
        os.close(w)
        os.close(r)


def _exchange(out: socket.socket, inbound: socket.socket) -> None:
    """One request and its reply, then a jiffy's pause: the connection has received."""
    out.sendall(b"q\n")
    assert inbound.recv(10) == b"q\n"
    inbound.sendall(b"a\n")
    assert out.recv(10) == b"a\n"
    time.sleep(0.02)


@pytest.mark.parametrize(("outstanding", "way"), [(False, "in"), (True, "loop")])
def test_a_loop_polling_its_listener_and_a_dependency(pair, outstanding, way):
    # GIVEN a loop polling its listener and a dependency connection, which has either
    # received its last reply, or sent a request since
    listener, out, inbound = pair
    _exchange(out, inbound)
    if outstanding:
        out.sendall(b"q\n")
    ep = select.epoll()
    ep.register(listener.fileno(), select.EPOLLIN)
    ep.register(out.fileno(), select.EPOLLIN)
    try:
        # THEN it waits for work, or for the dependency's reply
        assert direction_of(lambda: ep.poll(30)) == way
    finally:
        ep.close()


def _pair_only(*socks: socket.socket) -> WaitedSockets:
    """This process's WaitedSockets, counting only ``socks``: another test's connection
    left open in this process, with traffic in the last second, would be a client too."""
    waits = WaitedSockets(os.getpid(), max_age=3600)  # no re-read of the descriptors
    mine = {os.fstat(s.fileno()).st_ino for s in socks}
    waits._way = {i: w for i, w in waits._way.items() if i in mine}
    return waits


def test_flows_count_replies_due_and_clients_with_traffic(pair):
    _, out, inbound = pair
    _exchange(out, inbound)
    waits = _pair_only(out, inbound)
    if waits.activity_unavailable:
        pytest.skip(waits.activity_unavailable)
    # the accepted end received a request within the second: a client with traffic
    assert waits.flows() == (0, 1)
    out.sendall(b"q\n")
    time.sleep(0.25)  # past the cached reading
    assert waits.flows() == (1, 1)
    inbound.recv(10)
    inbound.sendall(b"a\n")
    out.recv(10)
    time.sleep(0.25)
    assert waits.flows() == (0, 1)


def test_a_connection_that_only_sends_never_awaits(pair, monkeypatch):
    # a log or metrics pusher: sends, never receives a byte, on a connection older than any
    # first reply (the bound lowered, so that this one is)
    monkeypatch.setattr("diagnose.collect.tcpinfo.FIRST_REPLY_MS", 0)
    _, out, _ = pair
    out.sendall(b"metric 1\n")
    waits = _pair_only(*pair)
    if waits.activity_unavailable:
        pytest.skip(waits.activity_unavailable)
    assert waits.flows() == (0, 1)


# --- pipes: the process's input when its writers are outside it ------------------------------


def _reader_blocked(cmd: list[str], **kw: object) -> tuple[int, str]:
    """A child process blocked reading its stdin: (PID, its /proc syscall line)."""
    p = subprocess.Popen([sys.executable, "-c", *cmd], **kw)  # type: ignore[call-overload]
    deadline = time.monotonic() + 10
    text = ""
    while time.monotonic() < deadline:
        with contextlib.suppress(OSError), open(f"/proc/{p.pid}/syscall") as fh:
            text = fh.read().strip()
        if text and text.split()[0].isdigit() and int(text.split()[0]) == 0:  # read
            break
        time.sleep(0.02)
    return p.pid, text


def _end(pid: int) -> None:
    with contextlib.suppress(OSError):
        os.kill(pid, 9)
        os.waitpid(pid, 0)


def test_stdin_fed_from_outside_the_process_is_its_input():
    # GIVEN a consumer reading its stdin, a pipe whose writing end this test (its parent) holds
    pid, text = _reader_blocked(["import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
    try:
        # THEN waiting on it is waiting for work
        assert WaitedSockets(pid).of_thread(pid, text) == "in"
    finally:
        _end(pid)


def test_near_miss_a_pipe_its_own_child_writes_says_nothing():
    # GIVEN the same read, of a pipe whose only writer is the reader's own child
    code = (
        "import os, subprocess, sys; r, w = os.pipe(); "
        "subprocess.Popen(['sleep', '30'], stdout=w); os.close(w); os.read(r, 1)"
    )
    pid, text = _reader_blocked([code])
    try:
        # THEN the kernel's view says nothing: the child is a dependency the frames name
        assert WaitedSockets(pid).of_thread(pid, text) == ""
    finally:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/task/{pid}/children") as fh:
            for child in fh.read().split():
                os.kill(int(child), 9)
        _end(pid)


def test_a_scan_past_its_time_says_nothing(monkeypatch):
    # GIVEN the same consumer, on a host whose processes take longer to read than allowed
    monkeypatch.setattr(sockwait, "PIPE_SCAN_MAX_S", -1.0)
    pid, text = _reader_blocked(["import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
    try:
        # THEN its pipe says nothing (the frames decide, as without the scan)
        assert WaitedSockets(pid).of_thread(pid, text) == ""
    finally:
        _end(pid)


def test_a_process_that_ends_during_the_scan_is_skipped(monkeypatch):
    # GIVEN every process's stat read empty, as of one that ended since the listing
    pid, text = _reader_blocked(["import sys; sys.stdin.readline()"], stdin=subprocess.PIPE)
    real = sockwait.read_proc
    monkeypatch.setattr(
        sockwait, "read_proc", lambda path: "" if path.endswith("/stat") else real(path)
    )
    try:
        # THEN the scan goes on, and a writer whose parent is unknown may be the reader's
        # own child: the pipe says nothing
        assert WaitedSockets(pid).of_thread(pid, text) == ""
    finally:
        _end(pid)


def test_the_tcp_table_is_read_again_only_for_a_socket_opened_since(pair):
    listener, out, _ = pair
    out.settimeout(30)
    waits = WaitedSockets(os.getpid(), max_age=0)  # descriptors read at every call
    reads = waits.table_reads
    for _ in range(3):  # the same sockets: their rows are kept
        waits.refresh()
    assert waits.table_reads == reads
    # a connection made since is looked up, and faces out; the one accepted for it, in
    late = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    try:
        late.settimeout(30)
        tid, text = blocked(lambda: late.recv(10))
        assert waits.of_thread(tid, text) == "out"
        assert waits.table_reads == reads + 1
        accepted.settimeout(30)
        tid, text = blocked(lambda: accepted.recv(10))
        assert waits.of_thread(tid, text) == "in"
        assert waits.table_reads == reads + 1
    finally:
        late.close()
        accepted.close()


def test_a_connection_made_since_is_counted_from_one_dump(pair, monkeypatch):
    # a connection made for one call lives less than a starved sampler takes to parse the
    # namespace's /proc/net/tcp and then look each socket up: one dump reads both at once
    listener, _, _ = pair
    waits = WaitedSockets(os.getpid(), max_age=3600)
    if waits.activity_unavailable:
        pytest.skip(waits.activity_unavailable)

    def no_table(pid: int) -> list[sockwait.TcpRow]:
        raise AssertionError("/proc/net/tcp read where sock_diag serves")

    monkeypatch.setattr(sockwait, "tcp_rows", no_table)
    call = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    with call, accepted:
        call.sendall(b"q\n")  # its request, no reply yet
        time.sleep(0.02)
        waiting, _ = waits.flows()
        inode = os.fstat(call.fileno()).st_ino
        assert waiting >= 1 and waits.activity()[inode].awaiting()


def test_near_miss_without_sock_diag_the_table_is_read_from_proc(pair, monkeypatch):
    monkeypatch.setattr(sockwait.tcpinfo, "unavailable", lambda pid: "no netlink here")
    listener, _, _ = pair
    waits = WaitedSockets(os.getpid(), max_age=0)
    late = socket.create_connection(listener.getsockname())
    accepted, _ = listener.accept()
    with late, accepted:
        late.settimeout(30)
        tid, text = blocked(lambda: late.recv(10))
        assert waits.of_thread(tid, text) == "out"
        assert waits.flows() is None  # no socket times: not counted, not guessed
