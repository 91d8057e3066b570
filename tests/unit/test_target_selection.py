"""Target selection by structure (diagnose/collect/selection.py) on hand-built process trees.

Each tree is what /proc showed for a real shape (the zoo's samples, gunicorn 27, uvicorn
0.54 --workers, multiprocessing) or its near miss: the decision must follow the structure,
never which process is busier.
"""

from __future__ import annotations

from dataclasses import replace

import pytest

from diagnose.bundle.sections import LeftOut
from diagnose.collect.selection import (
    MAX_WORKERS,
    ProcInfo,
    Selection,
    choose_workers,
    master_kind,
    one_process,
    parse_workers,
    select_service,
)
from diagnose.collect.target import NOTE_LEFT_OUT, selection_note
from diagnose.errors import TargetError

PY = "/srv/venv/bin/python"
GUNICORN = (PY, "-m", "gunicorn", "app:app", "--bind", "127.0.0.1:8000", "--workers", "2")
UVICORN = (PY, "-m", "uvicorn", "app:app", "--port", "8000", "--workers", "2")
SPAWNED = (PY, "-B", "-c", "from multiprocessing.spawn import spawn_main; spawn_main(tracker_fd=7, pipe_handle=9)", "--multiprocessing-fork")  # fmt: skip
TRACKER = (PY, "-B", "-c", "from multiprocessing.resource_tracker import main;main(6)")
HTTP = frozenset({1001})
STORE = frozenset({2002})


def proc(pid: int, cmdline: tuple[str, ...], **kw: object) -> ProcInfo:
    exe = kw.pop("exe", PY if cmdline and "python" in cmdline[0] else cmdline[0])
    fields: dict[str, object] = {
        "comm": kw.pop("comm", "python"),
        "exe": exe,
        "is_python": kw.pop("is_python", "python" in str(exe)),
    }
    fields.update(kw)
    return ProcInfo(pid, cmdline=cmdline, **fields)  # type: ignore[arg-type]


def test_a_threaded_service_with_a_feature_store_child_stays_on_the_service():
    # GIVEN the zoo's fraud-scoring service: 9 threads, listening on its HTTP port, and a
    # feature store forked with multiprocessing (the same command line) listening on its
    # own port, and busier than the service (an I/O-bound service uses little CPU)
    argv = (PY, "app.py", "--port", "8000", "--store-port", "8001")
    store = proc(11, argv, threads=9, listening=STORE, ports=("127.0.0.1:8001",), cpu_cores=0.4)
    root = proc(10, argv, threads=9, listening=HTTP, ports=("127.0.0.1:8000",), cpu_cores=0.03, children=(store,))  # fmt: skip
    # WHEN the service is selected
    sel = select_service(root)
    # THEN it is the PID given, and the store is left out as a helper, with its port
    assert sel.kind == "service" and sel.pids == (10,)
    assert "serves requests itself" in sel.why and "127.0.0.1:8000" in sel.why
    assert [(x.pid, x.why) for x in sel.left_out] == [(11, "a helper (a server of its own on 127.0.0.1:8001)")]  # fmt: skip


def test_a_service_without_a_listening_socket_but_with_request_threads_stays():
    # GIVEN a queue consumer (no listening socket) whose threads wait on TCP connections,
    # and a forked child that runs its program and is far busier (a sidecar)
    argv = (PY, "consumer.py")
    sidecar = proc(21, argv, cpu_cores=0.9)
    root = proc(20, argv, threads=8, request_threads=6, cpu_cores=0.01, children=(sidecar,))
    # WHEN selected THEN the consumer stays: its own threads are in a request path
    sel = select_service(root)
    assert sel.pids == (20,)
    assert "6 of its threads are in TCP connections" in sel.why
    assert sel.left_out[0].pid == 21


def test_a_forked_helper_that_inherited_the_services_socket_but_has_a_port_of_its_own_is_a_helper():
    # GIVEN a threaded service, idle (no thread in a TCP connection), whose feature store
    # was forked after the service bound its port: the store holds the inherited socket
    # and a port of its own
    argv = (PY, "app.py")
    store = proc(11, argv, listening=HTTP | STORE, ports=("127.0.0.1:8000", "127.0.0.1:8001"))
    root = proc(10, argv, threads=9, listening=HTTP, ports=("127.0.0.1:8000",), children=(store,))
    # WHEN selected THEN the service stays: a worker serves its master's sockets only
    sel = select_service(root)
    assert sel.pids == (10,) and sel.kind == "service"
    assert "a server of its own" in sel.left_out[0].why


def test_a_service_holding_connections_it_accepted_stays_whatever_its_child_inherited():
    # GIVEN a CPU-bound threaded service (its threads run: none blocked on TCP) with a
    # forked helper that inherited its listening socket; the service holds 5 connections
    # it accepted on its port
    argv = (PY, "app.py")
    helper = proc(11, argv, listening=HTTP, cpu_cores=0.9)
    root = proc(10, argv, threads=9, listening=HTTP, accepted=5, children=(helper,))
    # WHEN selected THEN it stays, and says why
    sel = select_service(root)
    assert sel.pids == (10,) and "it holds 5 connection(s) accepted on" in sel.why
    # near miss: the same tree where the parent holds no accepted connection is a
    # pre-fork server (a master accepts none; its workers do)
    idle = proc(10, argv, threads=9, listening=HTTP, children=(helper,))
    assert select_service(idle).pids == (11,)


def test_a_gunicorn_master_is_followed_to_both_workers():
    # GIVEN gunicorn 27 with 2 sync workers: forked (the same command line), sharing the
    # master's listening socket; the master also holds its control socket
    w1 = proc(31, GUNICORN, listening=HTTP, ports=("127.0.0.1:8000",))
    w2 = proc(32, GUNICORN, listening=HTTP, ports=("127.0.0.1:8000",))
    ctl = frozenset({3003})
    root = proc(30, GUNICORN, threads=2, listening=HTTP | ctl, ports=("127.0.0.1:8000", "unix:/root/.gunicorn/gunicorn.ctl"), children=(w1, w2))  # fmt: skip
    sel = select_service(root)
    assert sel.kind == "prefork" and sel.pids == (31, 32)
    assert sel.followed == (30,) and sel.master is not None and sel.master.pid == 30
    assert "a gunicorn master" in sel.why and "2 workers (31, 32)" in sel.why


def test_a_gunicorn_master_with_one_worker_is_still_a_master():
    # near miss: one child only; it is still the master's worker, not a helper
    w = proc(41, GUNICORN, listening=HTTP)
    root = proc(40, GUNICORN, threads=2, listening=HTTP, children=(w,))
    sel = select_service(root)
    assert sel.kind == "prefork" and sel.pids == (41,)


def test_a_uvicorn_master_is_followed_to_its_spawned_workers_not_the_resource_tracker():
    # GIVEN uvicorn --workers 2: spawned workers (another command line, sharing the socket)
    # and multiprocessing's resource tracker
    tracker = proc(51, TRACKER)
    w1 = proc(52, SPAWNED, threads=3, listening=HTTP)
    w2 = proc(53, SPAWNED, threads=9, listening=HTTP)
    root = proc(50, UVICORN, listening=HTTP, ports=("127.0.0.1:8000",), children=(tracker, w1, w2))
    sel = select_service(root)
    assert sel.kind == "prefork" and sel.pids == (52, 53)
    assert [(x.pid, x.why) for x in sel.left_out] == [(51, "multiprocessing's resource tracker")]


def test_a_master_whose_child_does_not_share_its_socket_leaves_that_child_out():
    # near miss: a gunicorn master that also started a metrics exporter (its own port)
    w = proc(61, GUNICORN, listening=HTTP)
    exporter = proc(62, GUNICORN, listening=STORE, ports=("0.0.0.0:9100",))
    root = proc(60, GUNICORN, listening=HTTP, children=(w, exporter))
    sel = select_service(root)
    assert sel.pids == (61,)
    assert sel.left_out[0].why == "a server of its own (listening on 0.0.0.0:9100)"


def test_a_shell_wrapper_is_followed_and_the_decision_is_made_again_below_it():
    # GIVEN sh -c 'cd /srv && gunicorn ...': a shell waiting for the gunicorn master
    w1 = proc(72, GUNICORN, listening=HTTP)
    w2 = proc(73, GUNICORN, listening=HTTP)
    master = proc(71, GUNICORN, listening=HTTP, children=(w1, w2))
    sh = proc(70, ("/bin/sh", "-c", "cd /srv && gunicorn app:app"), comm="sh", exe="/usr/bin/dash", is_python=False, waits_for_child=True, children=(master,))  # fmt: skip
    sel = select_service(sh)
    assert sel.kind == "prefork" and sel.pids == (72, 73)
    assert sel.followed == (70, 71)
    assert sel.why.startswith("PID 70 (sh) is a wrapper; PID 71 is a gunicorn master")


def test_a_python_launcher_waiting_for_its_only_child_is_a_wrapper():
    # GIVEN python launch.py doing subprocess.run(["python", "serve.py"]): its one thread
    # waits in wait4 for the child; the child serves
    child = proc(81, (PY, "serve.py"), listening=HTTP)
    root = proc(80, (PY, "launch.py"), waits_for_child=True, children=(child,))
    sel = select_service(root)
    assert sel.pids == (81,) and sel.kind == "wrapper" and sel.followed == (80,)
    assert "is a wrapper" in sel.why


def test_an_idle_launcher_polling_its_one_serving_child_is_followed():
    # GIVEN python launch.py that started serve.py with subprocess.Popen and polls it in a
    # sleep loop (so it is not waiting in wait4): no socket, no TCP, idle; the child serves
    child = proc(81, (PY, "serve.py"), listening=HTTP, ports=("127.0.0.1:8000",))
    root = proc(80, (PY, "launch.py"), cpu_cores=0.0, children=(child,))
    # WHEN selected THEN the child is the service, and the reason names the launcher
    sel = select_service(root)
    assert sel.pids == (81,) and sel.kind == "wrapper" and sel.followed == (80,)
    assert sel.why.startswith("PID 80 is a launcher")


def test_a_launcher_of_a_server_and_the_store_it_uses_is_followed_to_the_server():
    # GIVEN blind batch 15's s07: python service.py starts gunicorn (4 workers) and a TCP
    # feature store, then sleeps; the workers connect to the store's port
    workers = tuple(
        proc(91 + i, ("gunicorn: worker [app:app]",), exe=PY, is_python=True, listening=HTTP,
             connects_to=frozenset({"127.0.0.1:18857"}))
        for i in range(4)
    )  # fmt: skip
    guni = proc(90, (PY, "/venv/bin/gunicorn", "-w", "4", "app:app"), listening=HTTP,
                ports=("127.0.0.1:18807",), children=workers)  # fmt: skip
    store = proc(89, (PY, "store.py"), listening=STORE, ports=("127.0.0.1:18857",))
    root = proc(88, (PY, "service.py"), cpu_cores=0.0, children=(store, guni))
    sel = select_service(root)
    # THEN the server's workers are the service, the store its dependency, the launcher named
    assert sel.pids == (91, 92, 93, 94) and sel.kind == "prefork", sel
    assert sel.why.startswith("PID 88 is a launcher") and "whose child 90 serves" in sel.why
    assert (
        LeftOut(89, "python", "a dependency of 90 (listening on 127.0.0.1:18857)") in sel.left_out
    )
    # near miss: two servers neither of which uses the other: the launcher is not followed
    alone = replace(guni, children=tuple(replace(w, connects_to=frozenset()) for w in workers))
    assert select_service(replace(root, children=(store, alone))).pids == (88,)


@pytest.mark.parametrize(
    "near_miss",
    [
        {"cpu_cores": 0.6},  # it works itself (a pipeline using its tokenizer server)
        {"cpu_cores": None},  # its CPU could not be read: nothing is assumed
        {"cpu_cores": 0.0, "second_child": True},  # two children: not one it launched
        # threads of its own besides the main one, waiting on something no check here names
        # (a queue, a socket of a protocol not read): a service's threads (issue 39, class 1)
        {"cpu_cores": 0.0, "threads": 9},
    ],
)
def test_near_misses_of_a_launcher_stay(near_miss: dict):
    tok = proc(81, (PY, "-m", "tokserver"), listening=STORE, ports=("127.0.0.1:9000",))
    kids = (tok, proc(82, (PY, "-m", "metrics"))) if near_miss.get("second_child") else (tok,)
    threads = near_miss.get("threads", 1)
    root = proc(
        80, (PY, "pipeline.py"), cpu_cores=near_miss["cpu_cores"], children=kids, threads=threads
    )
    sel = select_service(root)
    assert sel.pids == (80,) and sel.kind == "service"
    assert sel.left_out[0] == LeftOut(
        81, "python", "a server of its own (listening on 127.0.0.1:9000)"
    )


def test_a_wrapper_of_different_programs_is_ambiguous_and_says_which():
    a = proc(91, (PY, "a.py"))
    b = proc(92, (PY, "b.py"))
    sh = proc(90, ("bash", "run.sh"), comm="bash", exe="/usr/bin/bash", is_python=False, children=(a, b))  # fmt: skip
    with pytest.raises(TargetError, match=r"91 .*a\.py; 92 .*b\.py.*attach to the one"):
        select_service(sh)


def test_a_multiprocessing_pool_parent_is_followed_to_its_workers():
    # GIVEN a Pool(2) parent: 4 threads (the pool's handlers) waiting on pipes, no socket;
    # forked workers running its program
    argv = (PY, "batch.py")
    w1, w2 = proc(101, argv, cpu_cores=0.9), proc(102, argv, cpu_cores=0.9)
    root = proc(100, argv, threads=4, cpu_cores=0.01, children=(w1, w2))
    sel = select_service(root)
    assert sel.kind == "multiprocessing" and sel.pids == (101, 102)


def test_a_multiprocessing_parent_joining_its_workers_is_no_wrapper():
    # GIVEN batch 14's s12: the parent started a broker child (another program, listening),
    # forked 2 workers that pull jobs from it, and joins them (its one thread in wait4)
    argv = (PY, "service.py")
    broker = proc(121, (PY, "broker.py", "18862"), listening=STORE, ports=("127.0.0.1:18862",))
    w1, w2 = proc(122, argv, cpu_cores=0.9), proc(123, argv, cpu_cores=0.9)
    root = proc(120, argv, waits_for_child=True, cpu_cores=0.0, children=(broker, w1, w2))
    # THEN its workers are the service, the broker a server of its own (it was refused as
    # "a wrapper whose children run different programs")
    sel = select_service(root)
    assert sel.kind == "multiprocessing" and sel.pids == (122, 123), sel
    assert sel.left_out[0].pid == 121 and "server of its own" in sel.left_out[0].why
    # near miss: a Python launcher joining a child that runs another program stays a wrapper
    launcher = proc(124, (PY, "launch.py"), waits_for_child=True, children=(w1,))
    assert select_service(launcher).kind == "wrapper"


def test_a_multiprocessing_parent_that_works_itself_is_captured_with_its_workers():
    # near miss: the parent post-processes results itself (half a core)
    argv = (PY, "batch.py")
    w1 = proc(111, argv, cpu_cores=0.5)
    root = proc(110, argv, threads=4, cpu_cores=0.5, children=(w1,))
    sel = select_service(root)
    assert sel.pids == (110, 111) and "it works itself" in sel.why


def test_a_child_running_another_program_is_a_helper_however_busy():
    # GIVEN a service without a listening socket whose child is a tokenizer server
    # (another program), much busier than the service
    tok = proc(121, (PY, "-m", "tokserver"), cpu_cores=1.5)
    root = proc(120, (PY, "worker.py"), threads=3, cpu_cores=0.02, children=(tok,))
    sel = select_service(root)
    assert sel.pids == (120,) and sel.left_out[0].why == "a helper of the service"


def test_inductor_compile_workers_and_native_children_are_never_workers():
    inductor = proc(131, (PY, "/srv/venv/lib/python3.11/site-packages/torch/_inductor/compile_worker/__main__.py", "--workers=2"))  # fmt: skip
    redis = proc(132, ("redis-server",), comm="redis-server", exe="/usr/bin/redis-server", is_python=False)  # fmt: skip
    root = proc(130, (PY, "serve.py"), children=(inductor, redis))
    sel = select_service(root)
    assert sel.pids == (130,)
    assert {x.pid: x.why for x in sel.left_out} == {
        131: "a torch.compile (inductor) compile worker",
        132: "not a Python process",
    }


def test_a_native_service_with_python_children_stays():
    child = proc(141, (PY, "metrics.py"))
    root = proc(140, ("/opt/bin/server",), comm="server", exe="/opt/bin/server", is_python=False, threads=12, children=(child,))  # fmt: skip
    assert select_service(root).pids == (140,)


def test_torchrun_workers_run_other_command_lines_and_may_listen():
    w0 = proc(151, (PY, "-u", "serve.py", "--rank", "0"), listening=STORE)
    w1 = proc(152, (PY, "-u", "serve.py", "--rank", "1"))
    root = proc(150, (PY, "/srv/venv/bin/torchrun", "--nproc-per-node", "2", "serve.py"), children=(w0, w1))  # fmt: skip
    assert master_kind(root) == "torchrun"
    assert select_service(root).pids == (151, 152)
    # near miss: the agent listening itself (its rendezvous store) is still only the agent
    agent = proc(150, root.cmdline, listening=HTTP, ports=("0.0.0.0:29400",), children=(w0, w1))
    assert select_service(agent).pids == (151, 152)


def test_a_single_process_uvicorn_with_a_helper_child_serves_itself():
    # near miss of a master: `python -m uvicorn app:app` without --workers serves in-process;
    # a cache it forked, listening on a port of its own, is a helper
    cache = proc(161, UVICORN, listening=STORE, ports=("127.0.0.1:6400",))
    root = proc(160, UVICORN, listening=HTTP, ports=("127.0.0.1:8000",), children=(cache,))
    sel = select_service(root)
    assert sel.pids == (160,) and "serves requests itself" in sel.why


def test_master_kind_reads_the_program_not_its_arguments():
    assert master_kind(proc(1, GUNICORN)) == "gunicorn"
    assert master_kind(proc(1, ("gunicorn: master [app:app]",), exe=PY)) == "gunicorn"
    assert master_kind(proc(1, ("/srv/venv/bin/celery", "-A", "proj", "worker"), exe=PY, is_python=True)) == "celery"  # fmt: skip
    # a service whose argument happens to be 'uvicorn' is no master
    assert master_kind(proc(1, (PY, "serve.py", "uvicorn"))) == ""
    assert master_kind(proc(1, (PY, "-c", "import uvicorn"))) == ""


def test_one_process_keeps_the_busiest_worker_and_names_the_others():
    # GIVEN gunicorn's two workers, the second busier
    w1 = proc(31, GUNICORN, listening=HTTP, cpu_cores=0.2)
    w2 = proc(32, GUNICORN, listening=HTTP, cpu_cores=0.7)
    root = proc(30, GUNICORN, listening=HTTP, children=(w1, w2))
    # WHEN one process is kept for the capture
    sel = one_process(select_service(root))
    # THEN the busiest worker, and the other named as left out with the reason
    assert sel.pids == (32,) and sel.kind == "prefork" and sel.followed == (30,)
    assert "following the busiest, PID 32 (0.70 cores over 0.3 s)" in sel.why
    assert [(x.pid, x.why) for x in sel.left_out] == [
        (31, "another worker of the service, less busy (a capture covers one process)")
    ]


def test_one_process_ties_go_to_the_lowest_pid_and_a_single_worker_is_unchanged():
    w1, w2 = proc(41, GUNICORN, listening=HTTP), proc(42, GUNICORN, listening=HTTP)
    root = proc(40, GUNICORN, listening=HTTP, children=(w1, w2))
    assert one_process(select_service(root)).pids == (41,)
    alone = select_service(proc(50, (PY, "serve.py")))
    assert one_process(alone) == alone


def test_one_process_may_keep_a_multiprocessing_parent_that_works_itself():
    # near miss of the pool parent: it works itself and is the busiest: it is captured, and
    # nothing was followed
    argv = (PY, "batch.py")
    w1 = proc(111, argv, cpu_cores=0.3)
    root = proc(110, argv, threads=4, cpu_cores=0.9, children=(w1,))
    sel = one_process(select_service(root))
    assert sel.pids == (110,) and sel.followed == ()
    assert [x.pid for x in sel.left_out] == [111]


def test_the_note_says_which_process_why_and_who_was_left_out():
    sel = Selection("service", (proc(10, (PY, "app.py")),), "PID 10 serves requests itself",
                    (LeftOut(11, "python", "a helper of the service"),))  # fmt: skip
    note = selection_note(10, 10, sel)
    assert note == "PID 10 serves requests itself. Left out: 11 (python): a helper of the service"
    # a followed wrapper says whom it follows and how to stay
    wrapped = Selection("wrapper", (proc(71, (PY, "s.py")),), "PID 70 (sh) is a wrapper; PID 71 has no child processes", (), (70,))  # fmt: skip
    note = selection_note(70, 71, wrapped)
    assert note.endswith("following PID 71 (--no-follow stays on the PID given)"), note
    # near miss: a PID with no children and nothing left out gets no note
    assert selection_note(5, 5, Selection("service", (proc(5, (PY, "x.py")),), "no children")) == ""


def test_the_note_names_at_most_a_few_left_out_processes():
    left = tuple(LeftOut(100 + i, "python", "a helper of the service") for i in range(9))
    sel = Selection("service", (proc(10, (PY, "app.py")),), "PID 10 serves", left)
    note = selection_note(10, 10, sel)
    assert "105 (python)" in note and "106 (python)" not in note and "and 3 more" in note


def test_the_longest_note_reaches_every_report_whole():
    # GIVEN the note of a master with 8 workers and helpers: the most it names
    import copy

    from diagnose.app.report import diagnose
    from diagnose.render.charts import chart_data
    from diagnose.render.html import render_html
    from diagnose.render.markdown import render_markdown
    from diagnose.render.terminal import render_summary
    from tests.conftest import FIXTURES

    workers = tuple(proc(200 + i, GUNICORN, listening=HTTP, cpu_cores=0.1) for i in range(8))
    helpers = tuple(proc(300 + i, (PY, "-m", f"helper{i}")) for i in range(3))
    root = proc(199, GUNICORN, listening=HTTP, ports=("127.0.0.1:8000",), children=workers + helpers)  # fmt: skip
    sel = one_process(select_service(root))
    note = selection_note(199, sel.pids[0], sel)
    last = sel.left_out[NOTE_LEFT_OUT - 1]
    assert f"{last.pid} (python): {last.why}" in note and "and 4 more" in note
    # WHEN it is rendered in every report
    d = diagnose(FIXTURES / "bundles" / "lock_contention")
    report = copy.deepcopy(d.report)
    report["target"]["note"] = note
    outputs = {
        "md": render_markdown(report),
        "html": render_html(report, chart_data(d.report)),
        "terminal": render_summary(report, None, width=200),
    }
    # THEN none cuts it: the last process named and the count of the others are there
    for name, text in outputs.items():
        flat = " ".join(text.split())
        assert "and 4 more" in flat, name
        assert f"{last.pid} (python)" in flat, name


# --- --workers ---------------------------------------------------------------------------------


def _master(*cores: float) -> ProcInfo:
    workers = tuple(
        proc(61 + i, GUNICORN, listening=HTTP, cpu_cores=c) for i, c in enumerate(cores)
    )
    return proc(60, GUNICORN, listening=HTTP, children=workers)


def test_workers_all_keeps_every_worker_busiest_first():
    # GIVEN gunicorn's three workers, the second the busiest
    sel = choose_workers(select_service(_master(0.2, 0.9, 0.4)), "all")
    # THEN all three are captured, the busiest first (diagnose's own capture), none left out
    assert sel.pids == (62, 63, 61) and sel.left_out == ()
    assert "capturing 3 workers (62, 63, 61) at once" in sel.why
    assert sel.followed == (60,)


def test_workers_all_is_bounded_and_names_the_workers_beyond_the_bound():
    # GIVEN one more worker than --workers all captures
    cores = [0.1 * (i + 1) for i in range(MAX_WORKERS + 1)]
    sel = choose_workers(select_service(_master(*cores)), "all")
    # THEN the busiest MAX_WORKERS, and the idlest one named with the bound
    assert len(sel.pids) == MAX_WORKERS and 61 not in sel.pids
    assert [(x.pid, x.why) for x in sel.left_out] == [
        (61, f"another worker, beyond the {MAX_WORKERS} busiest that --workers all captures")
    ]


def test_workers_busiest_is_one_process_and_a_single_worker_is_the_same_either_way():
    root = _master(0.2, 0.9)
    assert choose_workers(select_service(root), "busiest") == one_process(select_service(root))
    alone = select_service(proc(50, (PY, "serve.py")))
    assert choose_workers(alone, "all") == alone


def test_workers_given_by_pid_must_be_workers_of_the_service():
    root = _master(0.2, 0.9, 0.4)
    sel = choose_workers(select_service(root), (61, 63))
    # the busiest of those given first; the other worker named as not asked for
    assert sel.pids == (63, 61)
    assert [(x.pid, x.why) for x in sel.left_out] == [
        (62, "another worker of the service, not among --workers")
    ]
    # near miss: the master, or a PID of no worker, is refused with the workers' PIDs
    with pytest.raises(TargetError, match=r"PID 60 is not a worker of this service \(its workers: 61, 62, 63\)"):  # fmt: skip
        choose_workers(select_service(root), (60,))


def test_parse_workers_reads_all_busiest_and_pids_and_refuses_the_rest():
    assert parse_workers("all") == "all" and parse_workers(" Busiest ") == "busiest"
    assert parse_workers("12, 7,12") == (12, 7)
    for bad in ("", "some", "12,x", "0", "-3", "12,,7"):
        with pytest.raises(ValueError, match="--workers takes all, busiest or PIDs"):
            parse_workers(bad)


def test_the_services_processes_are_its_workers_not_its_helpers():
    # GIVEN a uvicorn master with 2 workers and multiprocessing's resource tracker (issue 41,
    # item 10: "a service of 3 processes" was said beside "2 workers")
    import os

    from diagnose.collect.selection import choose_workers
    from diagnose.collect.target import _from_selection

    me = os.getpid()
    w1 = proc(me, (PY, "-c", "from multiprocessing.spawn import spawn_main"), listening=HTTP)
    w2 = proc(me + 1, (PY, "-c", "from multiprocessing.spawn import spawn_main"), listening=HTTP)
    tracker = proc(me + 2, (PY, "-c", "from multiprocessing.resource_tracker import main;main(5)"))
    root = proc(
        90,
        (PY, "-m", "uvicorn", "app:app", "--workers", "2"),
        listening=HTTP,
        children=(w1, w2, tracker),
    )
    sel = choose_workers(select_service(root), "busiest")
    # WHEN the target is described
    t = _from_selection(90, sel)
    # THEN its siblings are the other worker alone
    assert t.siblings == (me + 1,), t.siblings
