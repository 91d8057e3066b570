import textwrap
from pathlib import Path

import pytest

from diagnose.errors import BadRules
from diagnose.verdict.ruleset import check_dir, load_file, load_rules

GOOD = """
[[rule]]
id = "team.slow_tokenizer"
category = "preprocess"
title = "Tokenizer"
when = "oncpu_share_preprocess > 0.5"
summary = "{oncpu_share_preprocess:.0%} in preprocessing"
fixes = ["use the fast tokenizer"]
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def test_builtin_rules_load_without_errors():
    rs = load_rules()
    assert rs.broken == []
    cats = {r.category for r in rs.rules}
    assert cats == {"preprocess", "lock", "scheduling", "compute", "memory_bandwidth", "io", "idle"}
    assert {r.kind for r in rs.rules if r.category == "lock"} >= {"mutex", "gil"}


def test_extra_dir_adds_and_overrides_by_id(tmp_path):
    write(
        tmp_path,
        "team.toml",
        GOOD
        + GOOD.replace("team.slow_tokenizer", "lock.contended").replace(
            '"preprocess"', '"lock"', 1
        ),
    )
    rs = load_rules([tmp_path])
    ids = {r.id: r for r in rs.rules}
    assert "team.slow_tokenizer" in ids
    assert ids["lock.contended"].title == "Tokenizer"  # overridden
    assert str(tmp_path) in ids["lock.contended"].source


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        ("when = \"__import__('os').system('id')\"", 6, "function call"),
        ('when = "oncpu_share_preprocess.__class__ > 1"', 6, "attribute"),
        ('when = "9 ** 9 ** 9 ** 9 > oncpu_share_preprocess"', 6, "\\*\\*"),
        ('when = "no_such_metric > 1"', 6, "unknown metric"),
        (
            'when = "oncpu_share_preprocess > 0.5"\nsummary = "{oncpu_share_preprocess.__globals__}"',
            7,
            "plain metric name",
        ),
    ],
)
def test_bad_rules_are_rejected_with_file_and_line(tmp_path, body, line, message):
    text = f"""# comment
[[rule]]
id = "bad.one"
category = "lock"
title = "t"
{body}
"""
    if "summary" not in body:
        text += 'summary = "s"\n'
    p = write(tmp_path, "bad.toml", text)
    rules, broken = load_file(p)
    assert rules == []
    assert len(broken) == 1
    assert broken[0].where == f"{p}:{line}"
    assert broken[0].id == "bad.one"
    import re

    assert re.search(message, broken[0].message)


def test_invalid_toml_and_unknown_category(tmp_path):
    write(tmp_path, "a.toml", "[[rule]]\nid = \n")
    write(tmp_path, "b.toml", GOOD.replace('"preprocess"', '"gpu"'))
    good, broken = check_dir(tmp_path)
    assert good == 0
    msgs = sorted(str(b) for b in broken)
    assert "a.toml:2: invalid TOML" in msgs[0]
    assert "b.toml:4" in msgs[1] and "category 'gpu'" in msgs[1]


def test_broken_rule_does_not_break_the_others(tmp_path):
    write(
        tmp_path,
        "mixed.toml",
        GOOD + GOOD.replace("team.slow_tokenizer", "team.bad").replace("> 0.5", "> len('x')"),
    )
    rs = load_rules([tmp_path])
    assert "team.slow_tokenizer" in {r.id for r in rs.rules}
    assert [b.id for b in rs.broken] == ["team.bad"]


def test_missing_directory():
    with pytest.raises(BadRules, match="does not exist"):
        check_dir(Path("/nonexistent/rules"))


def test_measures_names_what_a_rule_measures_or_defaults_to_its_category_and_kind(tmp_path):
    p = write(tmp_path, "team.toml", GOOD + GOOD.replace("team.slow_tokenizer", "team.lanes")
              .replace('title = "Tokenizer"', 'title = "T"\nmeasures = "lanes"'))  # fmt: skip
    rules, broken = load_file(p)
    assert broken == []
    assert [r.measure for r in rules] == ["preprocess/None", "lanes"]
    bad = write(
        tmp_path, "bad.toml", GOOD.replace('title = "Tokenizer"', "measures = 3\ntitle = 'x'")
    )
    rules, broken = load_file(bad)
    assert rules == [] and "measures must be a name" in str(broken[0])
