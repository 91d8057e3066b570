"""py-spy runs in consecutive chunks (collect/pyspy.py): what each chunk's py-spy wrote is
kept, and a later chunk stopped before it wrote anything is no failed chunk. A shell script
stands in for py-spy (it says it samples, and writes its output when told to stop, as py-spy
does); the real py-spy is tests/e2e/test_attach.py."""

from __future__ import annotations

import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from diagnose.bundle.writer import BundleWriter
from diagnose.collect import pyspy
from diagnose.collect.base import CaptureContext, CaptureOptions

# says it samples, creates "$1" empty, then waits for SIGINT; on SIGINT writes "$1" (WRITE=1)
# and exits 0
FAKE = (
    'echo "py-spy> Sampling process 100 times a second. Press Control-C to exit." >&2; '
    ': > "$1"; '
    'trap \'[ "$WRITE" = 1 ] && echo "main;work 7" > "$1"; exit 0\' INT; '
    "while :; do sleep 0.05; done"
)


def context(tmp_path: Path) -> CaptureContext:
    t0 = time.monotonic()
    return CaptureContext(
        target=SimpleNamespace(pid=1),  # type: ignore[arg-type]
        writer=BundleWriter.create(tmp_path / "b"),
        options=CaptureOptions(duration=30.0),
        t0=t0,
        deadline=t0 + 30.0,
    )


def run_chunks(tmp_path: Path, writes: list[bool], stop_after: float) -> pyspy._ChunkedPySpy:
    """Chunks of 0.6 s whose fakes write their output when stopped as ``writes`` says
    (the last value holds for the chunks after it); the capture stopped after ``stop_after``
    seconds (a Ctrl-C)."""
    ctx = context(tmp_path)
    spawned: list[int] = []

    def argv_for(seconds: int, out: Path) -> list[str]:
        write = writes[min(len(spawned), len(writes) - 1)]
        spawned.append(1)
        return ["sh", "-c", f"WRITE={int(write)}; {FAKE}", "fake-py-spy", str(out)]

    runner = pyspy._ChunkedPySpy("pyspy", argv_for, ctx, "folded")
    runner.start()
    time.sleep(stop_after)
    ctx.stop_event.set()
    runner.thread.join(10)
    assert not runner.thread.is_alive()
    return runner


@pytest.fixture(autouse=True)
def short_chunks(monkeypatch):
    monkeypatch.setattr(pyspy, "CHUNK_SECONDS", 0.6)


def test_a_later_chunk_stopped_before_it_wrote_anything_is_left_out(tmp_path):
    # the first chunk wrote its samples; the second was stopped before it wrote a byte
    runner = run_chunks(tmp_path, writes=[True, False], stop_after=0.9)
    assert [rel for rel, *_ in runner.chunks] == ["python/pyspy-000.folded"]
    rel, _, _, rc, said = runner.chunks[0]
    assert rc == 0 and "Sampling process" in said
    assert (tmp_path / "b" / rel).read_text() == "main;work 7\n"
    assert not (tmp_path / "b" / "python" / "pyspy-001.folded").exists()


def test_a_later_chunk_that_wrote_before_the_stop_is_kept(tmp_path):
    runner = run_chunks(tmp_path, writes=[True], stop_after=0.9)
    assert [rel for rel, *_ in runner.chunks] == [
        "python/pyspy-000.folded",
        "python/pyspy-001.folded",
    ]
    for rel, *_ in runner.chunks:
        assert (tmp_path / "b" / rel).read_text() == "main;work 7\n"


def test_a_first_chunk_stopped_before_it_wrote_anything_is_still_listed(tmp_path):
    # the only chunk: the collector must see it to say that py-spy wrote nothing, and why
    runner = run_chunks(tmp_path, writes=[False], stop_after=0.3)
    assert [rel for rel, *_ in runner.chunks] == ["python/pyspy-000.folded"]
    assert (tmp_path / "b" / "python" / "pyspy-000.folded").read_text() == ""  # kept, empty


def test_a_py_spy_that_said_nothing_is_explained_by_how_it_ended():
    from diagnose.formats.pyspy import explain_failure

    stopped = explain_failure("", 42, -2)
    assert "stopped (signal 2) before it wrote anything" in stopped
    assert explain_failure("", 42, 3) == "py-spy exited with 3 and said nothing"
    # what it said wins over how it ended
    assert "not permitted" in explain_failure("Error: Permission Denied", 42, -2)
