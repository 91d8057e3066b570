"""A command diagnose launches (a sweep's service or load generator, ``diagnose run``'s
command) may start a daemon that leaves its process group: fork, ``setsid``, fork, and the
middle process exits. ``killpg`` cannot reach it; the marker every launched command carries
in its environment finds it, and it is stopped with the last command diagnose launched
(issue 40, finding 5). Each test runs the launcher in a process of its own."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import psutil

from tests.conftest import ROOT

#: fork, setsid, fork, write the grandchild's PID, sleep; the first process sleeps too
DAEMONIZING = """
import os, sys, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        open(sys.argv[1] + ".tmp", "w").write(str(os.getpid()))
        os.rename(sys.argv[1] + ".tmp", sys.argv[1])
        time.sleep(300)
    os._exit(0)
time.sleep(300)
"""

LAUNCHER = """
import os, sys, time
from pathlib import Path
from diagnose.run import LaunchedCommand
pidfile = Path(sys.argv[1])
cmd = LaunchedCommand([sys.executable, "-c", sys.argv[2], str(pidfile)])
other = None
if len(sys.argv) > 3:  # a process of the launcher's own, started before: never touched
    other = __import__("subprocess").Popen([sys.executable, "-c", "import time; time.sleep(300)"])
    print(other.pid, flush=True)
deadline = time.monotonic() + 20
while not pidfile.exists() and time.monotonic() < deadline:
    time.sleep(0.05)
daemon = int(pidfile.read_text())
print(daemon, os.getsid(daemon) != os.getsid(cmd.pid), flush=True)
cmd.stop(grace=2.0, capture_ended=True)
print("stopped", flush=True)
if other is not None:
    print("other alive", other.poll() is None, flush=True)
    other.kill()
"""


def run_launcher(tmp_path: Path, *extra: str) -> list[str]:
    out = subprocess.run(
        [sys.executable, "-c", LAUNCHER, str(tmp_path / "daemon.pid"), DAEMONIZING, *extra],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        check=False,
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_daemon_that_left_the_group_is_stopped_with_the_command(tmp_path):
    words = run_launcher(tmp_path)
    daemon, left_session = int(words[0]), words[1]
    assert left_session == "True"  # it did leave: killpg alone would have missed it
    deadline = time.monotonic() + 5
    while not gone(daemon) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert gone(daemon), f"the daemon {daemon} survived its command"


def test_a_child_the_launcher_started_itself_is_left_alone(tmp_path):
    words = run_launcher(tmp_path, "other")
    daemon = int(words[1])
    assert words[-2:] == ["alive", "True"]
    assert gone(daemon)
