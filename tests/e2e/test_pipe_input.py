"""A queue consumer that listens on nothing, fed through its stdin by a producer outside it
(tests/targets/pipe_consumer.py). Its wait on that pipe is waiting for work, whatever its
frames say: the pipe's writer is not the consumer or one of its children
(collect/sockwait.py). Blind batch 5's s11 (a stdin ticket consumer at 5 a second) was read
as "io/dependency 0.94" for it. The contrast: the same consumer with more work than a core
does is busy, not idle."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, end_session
from tests.e2e.cli import attach_json

pytestmark = pytest.mark.e2e
TARGET = str(ROOT / "tests" / "targets" / "pipe_consumer.py")


def _capture(tmp_path: Path, rate: int) -> dict:
    producer = subprocess.Popen(
        [sys.executable, TARGET, "produce", str(rate), "60"],
        stdout=subprocess.PIPE,
        start_new_session=True,
    )
    consumer = subprocess.Popen(
        [sys.executable, TARGET, "consume", "20"],
        stdin=producer.stdout,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    assert producer.stdout is not None
    producer.stdout.close()  # the consumer's copy is the only reading end
    try:
        assert consumer.stderr is not None and consumer.stderr.readline().startswith("ready")
        return attach_json(consumer.pid, tmp_path / f"rate{rate}")
    finally:
        for p in (producer, consumer):
            end_session(p)


def test_a_consumer_waiting_on_its_input_pipe_is_idle_not_io(tmp_path: Path):
    report = _capture(tmp_path, rate=5)
    m, v = report["metrics"], report["verdict"]
    assert m["busy_share_io"] < 0.1, m
    assert m["idle_share"] > 0.7 and m["idle_share_client"] > 0.7, m
    assert v["primary"] == "idle", v["headline"]


def test_the_same_consumer_fed_faster_than_it_scores_is_busy(tmp_path: Path):
    report = _capture(tmp_path, rate=0)
    m, v = report["metrics"], report["verdict"]
    assert m["busy_share_running"] + m["busy_share_runnable"] > 0.6, m
    assert m["idle_share"] < 0.3, m
    assert v["primary"] != "idle", v["headline"]
