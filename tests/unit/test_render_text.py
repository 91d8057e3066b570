"""Text the target controls, made safe for the terminal, Markdown and plotly."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt

from diagnose.render.text import md, md_code, pct, plain, plotly_text, short_frame

HOSTILE = [
    "<script>alert(1)</script>",
    "\"'><img src=x onerror=alert(2)>",
    "| a | b |",
    "[x](javascript:alert(3)) **bold** _it_ `tick` ~~s~~",
    "# heading",
    "1. item",
    "- item",
    "> quote",
    "\x1b[31mred\x1b[0m\x1b]0;title\x07",
    "line1\nline2\r\n",
    "\u202eevil\u2066",
    "&lt;b&gt; &amp;",
    "back\\slash\\",
    "<!-- comment -->",
]


def markdown() -> MarkdownIt:
    return MarkdownIt("commonmark", {"html": True}).enable(["table", "strikethrough"])


def inline_tokens(src: str) -> list:
    tokens = markdown().parse(src)
    out = []
    for t in tokens:
        out.append(t)
        out.extend(t.children or [])
    return out


@pytest.mark.parametrize("s", HOSTILE)
def test_plain_is_one_line_without_control_characters(s):
    out = plain(s)
    assert "\n" not in out and "\r" not in out
    assert not any(ord(c) < 0x20 or 0x7F <= ord(c) <= 0x9F for c in out)
    assert "\u202e" not in out and "\u2066" not in out


def test_plain_bounds_length_and_shows_escapes():
    assert plain("x" * 1000, 10) == "x" * 9 + "…"
    assert plain("a\x1bb") == "a\\x1bb"
    assert plain(None) == ""


@pytest.mark.parametrize("s", HOSTILE)
def test_md_text_renders_as_the_same_text_and_nothing_else(s):
    # GIVEN the text inside a paragraph of our own
    tokens = inline_tokens(f"{md(s)}\n")
    kinds = {t.type for t in tokens}
    # THEN it is one paragraph of plain text: no HTML, links, emphasis, code or blocks
    assert kinds <= {"paragraph_open", "paragraph_close", "inline", "text", "softbreak"}, kinds
    text = "".join(t.content for t in tokens if t.type == "text")
    assert text == plain(s).strip()


@pytest.mark.parametrize("s", HOSTILE)
def test_md_code_in_a_table_cell_stays_in_its_cell(s):
    src = f"| a | b |\n|---|---|\n| {md_code(s, table=True)} | end |\n"
    tokens = markdown().parse(src)
    cells = [t for t in tokens if t.type == "td_open"]
    assert len(cells) == 2
    assert not any(t.type.startswith("html") for t in inline_tokens(src))


def test_snake_case_stays_readable():
    assert md("lock_contention.py:32 intra_op_num_threads") == (
        "lock_contention.py:32 intra_op_num_threads"
    )
    assert md("_private __init__") == "\\_private \\_\\_init\\_\\_"


def test_plotly_text_has_no_tag_left():
    assert plotly_text("<b>x</b> & <br>") == "&lt;b&gt;x&lt;/b&gt; &amp; &lt;br&gt;"


def test_short_frame_keeps_the_file_name_and_line():
    assert short_frame("predict (/srv/app/model/runner.py:17)") == "predict (runner.py:17)"
    assert short_frame("sgemm_kernel (libopenblas.so.0)") == "sgemm_kernel (libopenblas.so.0)"


@pytest.mark.parametrize(
    "x, digits, out",
    [(None, 0, "n/a"), (0, 0, "0%"), (0.004, 0, "<1%"), (0.005, 0, "<1%"), (0.25, 0, "25%"),
     (0.0004, 1, "<0.1%"), (0.1234, 1, "12.3%"), (1, 0, "100%")],
)  # fmt: skip
def test_pct_never_shows_a_small_share_as_zero(x, digits, out):
    assert pct(x, digits) == out
