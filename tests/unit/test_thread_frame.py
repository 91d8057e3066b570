"""The ``thread (TID): NAME`` root frame: one type writes it, one pattern reads it."""

from __future__ import annotations

import pytest

from diagnose.app.compare import normalise_frame
from diagnose.formats.stacks import ThreadFrame


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("thread (4242): handler-7", ThreadFrame(4242, "handler-7")),
        ("thread (4242): ", ThreadFrame(4242, "")),  # what format() writes for no name
        ("thread (4242):", ThreadFrame(4242, "")),  # the same, its space stripped
        ("thread (4242)", ThreadFrame(4242, "")),  # py-spy's form for an unnamed thread
        ("thread (0x1f): b", ThreadFrame(31, "b")),  # py-spy's hex form
        ("thread (1): a: b (c)", ThreadFrame(1, "a: b (c)")),  # the name is the rest
    ],
)
def test_parse_reads_every_form_written(text, expected):
    assert ThreadFrame.parse(text) == expected


@pytest.mark.parametrize(
    "text", ["thread (x)", "thread 5: a", "Thread (5): a", "handle (app.py:3)", "thread (5)x", ""]
)
def test_parse_rejects_what_is_not_a_thread_frame(text):
    assert ThreadFrame.parse(text) is None


def test_format_is_what_flame_graphs_and_folded_files_hold():
    assert ThreadFrame(7, "worker-0").format() == "thread (7): worker-0"
    assert ThreadFrame(7).format() == "thread (7): "


def test_compare_reads_thread_frames_with_the_same_pattern():
    # a hex tid from py-spy is a thread too (compare's own pattern used to miss it)
    assert normalise_frame("thread (0x1f): worker-3") == "thread: worker-N"
    assert normalise_frame(ThreadFrame(5).format()) == "thread: (unnamed)"
