"""I/O by direction, on hand-built /proc and py-spy records.

Principle: a server thread blocked on a socket on behalf of the server's own code (reading
the next request on a kept-alive connection, writing a response the client reads slowly)
waits for its clients: idle, client-bound, never a dependency. A socket wait on behalf of a
client library (an outbound call) is a dependency, and the finding names the code that waited.
"""

from __future__ import annotations

import pytest

from diagnose.analyse.pipeline import analyse_data
from diagnose.analyse.threads import stack_wait_kind, thread_time
from tests.unit.analysis import FR, bundle_data, ticks

RECVFROM = 45  # x86_64
LIB = "/usr/lib/python3.11"
READINTO = f"SocketIO.readinto ({LIB}/socket.py:706)"
NEXT_REQUEST = (
    f"Thread._bootstrap ({LIB}/threading.py:995)",
    f"ThreadingMixIn.process_request_thread ({LIB}/socketserver.py:691)",
    f"BaseHTTPRequestHandler.handle ({LIB}/http/server.py:436)",
    f"BaseHTTPRequestHandler.handle_one_request ({LIB}/http/server.py:405)",
    READINTO,
)
GUNICORN_READ = (
    "run (/venv/lib/python3.11/site-packages/gunicorn/workers/gthread.py:200)",
    "Unreader.read (/venv/lib/python3.11/site-packages/gunicorn/http/unreader.py:37)",
)
DEPENDENCY = (
    f"Thread._bootstrap ({LIB}/threading.py:995)",
    f"BaseHTTPRequestHandler.handle_one_request ({LIB}/http/server.py:424)",
    "do_POST (app.py:40)",
    "FeatureClient.fetch (app.py:22)",
    READINTO,
)
HANDLER_READS = (
    f"BaseRequestHandler.__init__ ({LIB}/socketserver.py:755)",
    "_Handler.handle (store.py:21)",
)
HANDLER_HELPER = (
    f"BaseRequestHandler.__init__ ({LIB}/socketserver.py:755)",
    "_Handler.handle (store.py:25)",
    "lookup_upstream (store.py:60)",
)
HTTP_CLIENT = (
    "do_POST (app.py:40)",
    f"HTTPConnection.getresponse ({LIB}/http/client.py:1378)",
    READINTO,
)


@pytest.mark.parametrize(
    ("stack", "kind"),
    [
        (NEXT_REQUEST, "client"),
        (GUNICORN_READ, "client"),
        # near misses: the same socket read asked for by the handler's own client code, or
        # by an HTTP client library, inside the same server thread: a dependency
        (DEPENDENCY, "io"),
        (HTTP_CLIENT, "io"),
        # a socketserver handler reading its own connection (called by the server module)
        (HANDLER_READS, "client"),
        # near miss: the same handler calling its own helper that reads another socket: no
        # Python frame says which (""), so the kernel's view decides (a recv: io)
        (HANDLER_HELPER, ""),
        # a server's wait for work that is no socket read stays what it was
        ((f"EpollSelector.select ({LIB}/selectors.py:468)",), "idle"),
    ],
)
def test_the_code_that_asked_for_the_wait_decides_its_direction(stack, kind):
    assert stack_wait_kind(FR, stack) == kind


def _blocked_in(stack: tuple[str, ...]) -> dict:
    """8 threads blocked in recvfrom for 1 s with py-spy's ``stack``."""
    rows, iv = [], []
    for tid in range(1, 9):
        rows += ticks(tid, [0.0, 0.001, 0.002, 0.003, 0.004, 0.005, 0.006, 0.007, 0.008,
                            0.009, 0.01], state="S", syscall=RECVFROM)  # fmt: skip
        iv.append((tid, 0.0, 1.0, 0))
    return analyse_data(bundle_data(rows, iv, {0: stack}), FR).metrics


def test_threads_waiting_for_their_next_request_are_idle_not_io():
    m = _blocked_in(NEXT_REQUEST)
    assert m["busy_share_io"] == 0.0
    assert m["busy_threads_mean"] < 0.25
    assert m["idle_share_client"] == pytest.approx(1.0, abs=0.02)


def test_threads_waiting_on_a_dependency_are_io_and_the_waiting_code_is_named():
    m = _blocked_in(DEPENDENCY)
    assert m["busy_share_io"] > 0.9
    assert m["idle_share_client"] == 0.0
    assert m["io_wait_top_frame"] == "FeatureClient.fetch (app.py:22)"
    assert m["io_wait_top_frame_share"] == pytest.approx(1.0)


def test_client_waits_are_counted_per_interval():
    # one thread half the window in a client wait, half in a dependency wait
    rows = ticks(1, [0.0] * 11, state="S", syscall=RECVFROM)
    data = bundle_data(rows, [(1, 0.0, 0.5, 0), (1, 0.5, 1.0, 1)], {0: NEXT_REQUEST, 1: DEPENDENCY})
    tt = thread_time(data, FR)
    per = tt.per_thread.set_index("tid").loc[1]
    assert per["io"] == pytest.approx(0.5, abs=0.11)
    assert per["idle"] == pytest.approx(0.5, abs=0.11)


# --- the kernel's direction of the socket (collect/sockwait.py: the "sock" column) ----------

POLL = 7  # x86_64
#: a user's own client code with a socket timeout: CPython waits in poll(), and no frame of a
#: known library says it is a socket read
OWN_CLIENT = (
    f"Thread._bootstrap ({LIB}/threading.py:995)",
    "worker (svc.py:40)",
    "fetch (svc.py:22)",
)


def _waiting(stack: tuple[str, ...], syscall: int, sock: str) -> dict:
    rows, iv = [], []
    for tid in range(1, 9):
        rows += ticks(tid, [0.0] * 11, state="S", syscall=syscall, sock=sock)
        iv.append((tid, 0.0, 1.0, 0))
    return analyse_data(bundle_data(rows, iv, {0: stack}), FR).metrics


def test_a_poll_on_a_connection_the_service_made_is_a_dependency_whatever_the_frames():
    m = _waiting(OWN_CLIENT, POLL, "out")
    assert m["busy_share_io"] > 0.9 and m["idle_share_client"] == 0.0


def test_near_miss_the_same_poll_without_the_kernels_word_stays_waiting_for_work():
    m = _waiting(OWN_CLIENT, POLL, "")
    assert m["busy_share_io"] == 0.0


def test_a_read_on_a_connection_the_service_accepted_is_its_client_even_under_a_client_frame():
    m = _waiting(DEPENDENCY, RECVFROM, "in")
    assert m["busy_share_io"] == 0.0
    assert m["idle_share_client"] == pytest.approx(1.0, abs=0.02)


def test_a_loop_polling_clients_while_a_dependency_awaits_is_io_and_counted_as_the_loops():
    # "loop": an event loop's epoll over its clients and a dependency awaiting a reply
    m = _waiting(OWN_CLIENT, POLL, "loop")
    assert m["busy_share_io"] > 0.9 and m["idle_share_client"] == 0.0
    assert m["busy_share_io_loop"] == pytest.approx(m["busy_share_io"], abs=1e-3)
    # near miss: blocked on the dependency alone is I/O that is not a loop's
    m = _waiting(OWN_CLIENT, POLL, "out")
    assert m["busy_share_io"] > 0.9 and m["busy_share_io_loop"] == 0.0


FUTEX = 202  # x86_64
#: an HTTP client that waits in futex() inside its own library (a connection pool's condition)
POOLED_CLIENT = (
    "do_POST (app.py:40)",
    "Session.get (/venv/lib/python3.11/site-packages/requests/sessions.py:602)",
)


def test_a_futex_wait_under_a_socket_read_frame_is_a_sample_the_thread_has_left():
    # GIVEN batch 7's s03: request threads take turns on one connection; py-spy's last
    # sample of a thread was its socket read, /proc now sees it blocked in futex() (its
    # next turn in the queue): a socket read never waits there
    m = _waiting(DEPENDENCY, FUTEX, "")
    # THEN that wait is not I/O (was: all of it)
    assert m["busy_share_io"] == 0.0
    # near miss: a client library's frame may wait in futex() (its pool): still I/O
    m = _waiting(POOLED_CLIENT, FUTEX, "")
    assert m["busy_share_io"] > 0.9
    # near miss: the same socket frame with the kernel in recvfrom: I/O
    assert _waiting(DEPENDENCY, RECVFROM, "")["busy_share_io"] > 0.9
