"""Flame-graph trees for plotly's icicle chart: merged, bounded, with a thread index."""

from __future__ import annotations

import pytest

from diagnose.render.charts import (
    INTERPRETER_FRAME,
    flame_tree,
    flame_views,
    simplified,
    simplify_native,
)


def children(tree: dict, node: int) -> list[int]:
    return [i for i, p in enumerate(tree["parent"]) if p == node]


def by_frame(tree: dict, frame: str) -> list[int]:
    return [i for i, f in enumerate(tree["frame"]) if f == frame]


def assert_consistent(tree: dict) -> None:
    """Parents come before their children and weigh at least as much as them."""
    for i, p in enumerate(tree["parent"]):
        if i == 0:
            assert p == -1
            continue
        assert 0 <= p < i
    for i in range(len(tree["parent"])):
        kids = children(tree, i)
        assert sum(tree["value"][k] for k in kids) <= tree["value"][i] + 1e-9


def test_stacks_merge_into_one_tree_with_a_thread_index():
    # GIVEN two threads whose stacks share a prefix
    stacks = [
        (("thread (11): worker-0", "serve (app.py:10)", "predict (model.py:5)"), 3.0),
        (("thread (11): worker-0", "serve (app.py:10)", "tokenize (pre.py:7)"), 1.0),
        (("thread (12): worker-1", "serve (app.py:10)", "predict (model.py:5)"), 2.0),
    ]
    # WHEN they are merged
    tree = flame_tree(stacks, root_label="all")
    # THEN each prefix is one node, weighing the sum of the stacks through it
    assert tree["total"] == 6.0
    assert tree["value"][0] == 6.0 and tree["label"][0] == "all"
    assert_consistent(tree)
    t11 = by_frame(tree, "thread (11): worker-0")[0]
    assert tree["label"][t11] == "worker-0 (11)"
    assert tree["value"][t11] == 4.0
    serve = next(i for i in by_frame(tree, "serve (app.py:10)") if tree["parent"][i] == t11)
    assert tree["label"][serve] == "serve:10"  # a frame's line is in its label
    assert sorted(tree["label"][k] for k in children(tree, serve)) == ["predict:5", "tokenize:7"]
    # and every node below a thread's root frame carries that thread's index
    assert [t["label"] for t in tree["threads"]] == ["worker-0 (11)", "worker-1 (12)"]
    for i in range(1, tree["nodes"]):
        below = tree["frame"][i].startswith("thread") or tree["thread"][tree["parent"][i]] >= 0
        assert (tree["thread"][i] >= 0) == below
    assert tree["hidden_share"] == 0.0
    assert tree["max_depth"] == 3


def test_wait_views_list_each_thread_once():
    # GIVEN a thread that waited on a lock and on the GIL
    stacks = [
        (("lock wait", "thread (5): w", "handle (a.py:3)"), 2.0),
        (("gil wait", "thread (5): w", "handle (a.py:4)"), 1.0),
        (("lock wait", "thread (6): v", "handle (a.py:3)"), 1.0),
    ]
    tree = flame_tree(stacks)
    # THEN the wait classes sit above the threads, and the thread list has it once
    assert sorted(tree["label"][k] for k in children(tree, 0)) == ["GIL wait", "lock wait"]
    assert [(t["label"], t["value"]) for t in tree["threads"]] == [("w (5)", 3.0), ("v (6)", 1.0)]
    for i in children(tree, 0):
        assert tree["thread"][i] == -1


def test_a_huge_profile_is_bounded_and_says_how_much_it_merged():
    # GIVEN 64 threads x 400 distinct leaf functions (25,600 stacks), one heavy stack
    stacks = [
        ((f"thread ({t}): t{t}", "run (a.py:1)", f"leaf{n} (b.py:{n})"), 1.0)
        for t in range(64)
        for n in range(400)
    ]
    stacks.append((("thread (1): t1", "run (a.py:1)", "hot (c.py:1)"), 50_000.0))
    # WHEN it is drawn with at most 500 boxes (and no minimum share)
    tree = flame_tree(stacks, max_nodes=500, min_share=0)
    # THEN no more are drawn, the heaviest survive, and the rest is accounted for
    assert tree["nodes"] == 500
    assert_consistent(tree)
    assert by_frame(tree, "hot (c.py:1)")
    assert len(tree["threads"]) == 64
    drawn_leaves = sum(
        tree["value"][i] for i in range(tree["nodes"]) if tree["frame"][i].startswith("leaf")
    )
    assert 0 < drawn_leaves < 25_600
    assert tree["hidden_share"] == pytest.approx((25_600 - drawn_leaves) / tree["total"], abs=1e-4)


def test_frames_under_the_minimum_share_are_merged_into_their_caller():
    stacks = [(("main (a.py:1)", "big (a.py:2)"), 999.0), (("main (a.py:1)", "tiny (a.py:3)"), 1.0)]
    tree = flame_tree(stacks, min_share=0.01)
    assert not by_frame(tree, "tiny (a.py:3)")
    main = by_frame(tree, "main (a.py:1)")[0]
    assert tree["value"][main] == 1000.0  # the caller keeps the weight
    assert tree["hidden_share"] == pytest.approx(0.001)


def test_native_and_python_frames_are_coloured_apart():
    stacks = [(("serve (app.py:1)", "sgemm_kernel (libopenblas.so.0)"), 1.0)]
    tree = flame_tree(stacks)
    py, native = tree["color"][1], tree["color"][2]
    assert py.startswith("#") and native.startswith("#")
    assert py != native


@pytest.mark.parametrize("stacks", [[], [(("a (x.py:1)",), 0.0)], [(("a (x.py:1)",), -1.0)]])
def test_nothing_to_draw_is_none(stacks):
    assert flame_tree(stacks) is None


def test_frame_text_is_one_bounded_line():
    name = "evil\n\x1b[31m" + "x" * 5000
    tree = flame_tree([((f"thread (1): {name}", f"{name} (f.py:1)"), 1.0)])
    for text in tree["label"] + tree["frame"] + [t["label"] for t in tree["threads"]]:
        assert "\n" not in text and "\x1b" not in text
        assert len(text) <= 300


def test_each_thread_is_drawn_to_the_same_relative_detail():
    # GIVEN a big thread and a small one, each splitting its time 90/10
    stacks = [
        (("thread (1): big", "a (x.py:1)"), 9000.0),
        (("thread (1): big", "b (x.py:2)"), 1000.0),
        (("thread (2): small", "a (x.py:1)"), 9.0),
        (("thread (2): small", "b (x.py:2)"), 1.0),
    ]
    # WHEN frames under 1% are merged into their caller
    tree = flame_tree(stacks, min_share=0.01)
    # THEN the small thread keeps its 10% function: 1% of its own time, not of the total
    small = by_frame(tree, "thread (2): small")[0]
    assert sorted(tree["label"][k] for k in children(tree, small)) == ["a:1", "b:2"]


# --- the flame graph's options: a function's lines merged, interpreter frames hidden,
# --- long native chains folded (all on by default)

KERNEL = [f"k{i} ([kernel.kallsyms])" for i in range(10)]
EVAL = ["_PyEval_EvalFrameDefault (libpython3.11.so.1.0)", "PyObject_Call (libpython3.11.so.1.0)"]


def test_one_function_is_one_box_with_its_lines_merged():
    # GIVEN one function sampled at 8 lines (as py-spy reports it)
    stacks = [(("thread (1): w", "serve (app.py:1)", f"predict (m.py:{n})"), 1.0) for n in range(8)]
    # THEN by default it is one box, and with the lines apart 8 boxes that show their line
    merged = flame_tree(simplified(stacks, lines=True, native=True).items())
    assert [lab for lab in merged["label"] if lab.startswith("predict")] == ["predict"]
    apart = flame_tree(simplified(stacks, lines=False, native=True).items())
    labels = sorted(lab for lab in apart["label"] if lab.startswith("predict"))
    assert labels == [f"predict:{n}" for n in range(8)]
    # a merged frame still reads as Python (warm colour, its file in the hover text)
    i = merged["label"].index("predict")
    assert merged["frame"][i] == "predict (m.py, all lines)"
    assert merged["color"][i] == apart["color"][apart["label"].index("predict:0")]


def test_interpreter_frames_under_a_python_frame_are_hidden():
    # GIVEN py-spy --native style stacks: libpython frames between Python and BLAS frames
    st = ("thread (1): w", "serve (app.py:1)", *EVAL, "predict (m.py:5)", *EVAL,
          "sgemm_kernel (libopenblas.so.0)")  # fmt: skip
    assert simplify_native(st) == (
        "thread (1): w", "serve (app.py:1)", "predict (m.py:5)", "sgemm_kernel (libopenblas.so.0)"
    )  # fmt: skip
    # and a native stack with no Python frame above keeps one box for the interpreter
    raw = ("thread (1): w", "_start (python3.11)", *EVAL * 15, "memcpy (libc.so.6)")
    assert simplify_native(raw) == ("thread (1): w", INTERPRETER_FRAME, "memcpy (libc.so.6)")


def test_long_native_chains_are_folded():
    st = ("thread (1): w", "wait (q.py:3)", "__futex_wait (libc.so.6)", *KERNEL)
    assert simplify_native(st) == (
        "thread (1): w", "wait (q.py:3)", "__futex_wait (libc.so.6)", KERNEL[0],
        "[8 frames] ([kernel.kallsyms])", KERNEL[-1],
    )  # fmt: skip
    short = ("thread (1): w", *KERNEL[:5])
    assert simplify_native(short) == short  # five frames stay as they are


def test_thread_and_wait_frames_are_never_changed():
    st = ("lock wait", "thread (3): x (a.py:1)", "h (a.py:2)")
    assert simplified([(st, 1.0)], lines=True, native=True) == {
        ("lock wait", "thread (3): x (a.py:1)", "h (a.py, all lines)"): 1.0
    }


def test_the_page_carries_the_other_options_only_where_they_differ():
    from diagnose.render.model import stack_section

    # GIVEN a wall view with lines to merge, and a waits view without any line or native frame
    wall = [(("thread (1): w", f"f (a.py:{n})", *EVAL, "g (b.py:1)"), 1.0) for n in range(3)]
    waits = [(("lock wait", "thread (1): w", "[unknown]"), 1.0)]
    report = {"metrics": {}, "unmeasured": {},
              "stacks": stack_section({"wall": wall, "waits": waits})}  # fmt: skip
    views = flame_views(report)
    # THEN the default (both options on) is the view's tree; the others are kept apart
    assert set(views["wall"]["variants"]) == {"10", "01", "00"}
    assert "f" in views["wall"]["tree"]["label"]
    assert "f:0" in views["wall"]["variants"]["01"]["tree"]["label"]
    assert not any("libpython" in f for f in views["wall"]["tree"]["frame"])
    assert any("libpython" in f for f in views["wall"]["variants"]["10"]["tree"]["frame"])
    assert views["waits"]["variants"] == {}  # nothing to simplify: one tree
