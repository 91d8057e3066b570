"""The calls each line of the target's own code makes, in the order Python runs them
(collect/linecalls.py): read from real files through /proc/self/root, as the capture
reads the target's. The analysis that uses them: tests/unit/test_analysis_stages.py."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from diagnose.collect.linecalls import line_calls

APP = """\
import json
def handle(t):
    return {"queue": int(score(clean(t.text))) % 7}
def reply(x):
    out = fmt(self.model(tidy(x)))
    d[key()] = value()
    ranked = sorted(items, key=rank)
    words = [norm(w) for w in split(x)]
    total = sum(weigh(w) for w in x)
    later = lambda: never(x)
    return json.dumps(out)
"""


def calls_of(tmp_path: Path, source: str, lines: list[int], uid: int | None = None):  # type: ignore[no-untyped-def]
    path = tmp_path / "app.py"
    path.write_text(textwrap.dedent(source))
    path.chmod(0o644)
    stacks = [(f"serve ({path}:1)", f"handle ({path}:{n})", "leaf (/x/lib.py:1)") for n in lines]
    got = line_calls(stacks, os.getpid(), os.getuid() if uid is None else uid)
    return {int(k.rsplit(":", 1)[1]): v for k, v in got.items() if k.startswith(str(path))}


def test_a_line_s_calls_come_in_the_order_python_runs_them(tmp_path):
    got = calls_of(tmp_path, APP, [3, 5, 6, 7, 8, 9, 10, 11])
    # arguments before the call; a builtin that calls no Python of its own is marked
    assert got[3] == [("clean", ""), ("score", ""), ("int", "builtin")]
    assert got[5] == [("tidy", ""), ("model", ""), ("fmt", "")]
    assert got[6] == [("value", ""), ("key", "")]  # the value before the target
    assert got[7] == [("sorted", "callback")]  # it runs rank at this line
    # a comprehension: its body's calls, then its own frame (Python 3.11 and before)
    assert got[8] == [("split", ""), ("norm", ""), ("<listcomp>", "")]
    assert got[9] == [("sum", "builtin")]  # a generator's body runs in its own frame
    assert 10 not in got  # a lambda's body runs later, in its own frame
    assert got[11] == [("dumps", "")]


def test_only_calling_frames_of_the_service_s_own_readable_files(tmp_path):
    path = tmp_path / "app.py"
    path.write_text(APP)
    lib = "/usr/lib/python3.11/site-packages/lib.py"
    stacks = [
        (f"serve ({path}:3)", f"leaf ({path}:5)"),  # line 5 is a leaf: no call made there
        (f"other ({lib}:3)", f"leaf ({path}:7)"),  # an installed package's: not read
    ]
    got = line_calls(stacks, os.getpid(), os.getuid())
    assert list(got) == [f"{path}:3"]
    # a file the target's user may not read is not read for it (diagnose runs as root)
    path.chmod(0o600)
    assert line_calls(stacks, os.getpid(), os.getuid() + 12345) == {}
    assert line_calls(stacks, os.getpid(), os.getuid()) != {}  # its owner's, it is


def test_a_file_that_is_not_python_or_is_gone_gives_nothing(tmp_path):
    path = tmp_path / "app.py"
    path.write_text("def broken(:\n    pass\n")
    stacks = [(f"serve ({path}:1)", "leaf (/x/lib.py:1)"), ("a (/gone/app.py:1)", "b (/x.py:1)")]
    assert line_calls(stacks, os.getpid(), os.getuid()) == {}


def test_a_fifo_named_as_the_code_s_file_is_not_read(tmp_path):
    # the target names its files: a FIFO would block a reader forever
    path = tmp_path / "app.py"
    os.mkfifo(path, 0o644)
    stacks = [(f"serve ({path}:1)", "leaf (/x/lib.py:1)")]
    assert line_calls(stacks, os.getpid(), os.getuid()) == {}
