"""Rule files are data: property-based fuzzing and hand-written attacks on every loader of
them (diagnose/tomlfile.py, verdict/expr.py, verdict/template.py, verdict/ruleset.py,
analyse/frames.py). Whatever the text, each either loads or is rejected with its own error
type (which the CLI turns into one line and exit code 8), naming file:line; nothing in a
rule is ever run as code, and evaluating a loaded rule never raises."""

from __future__ import annotations

import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from diagnose.analyse.frames import load_frame_rules, split_frame
from diagnose.analyse.registry import known_metrics
from diagnose.errors import BadRules
from diagnose.tomlfile import TomlFile
from diagnose.verdict.expr import UNKNOWN, ExprError, compile_expr
from diagnose.verdict.ruleset import MAX_RULES_PER_FILE, load_file
from diagnose.verdict.template import TemplateError, compile_template, format_value
from tests.conftest import ROOT
from tests.unit.fuzzing import fuzz

KNOWN = known_metrics()
NAMES = sorted(KNOWN)[:12]
FUZZ = fuzz(300)

# -- values a metric may hold, including the ones analysis should never produce ---------
metric_values = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=10**300, max_value=10**400),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(), max_size=2),
    st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
)
metrics = st.dictionaries(st.sampled_from(NAMES), metric_values)


def _compiled_or_rejected(compile_fn, src, error):  # type: ignore[no-untyped-def]
    """What ``compile_fn`` made of ``src``, or None when it rejected it with one line."""
    try:
        return compile_fn(src, KNOWN)
    except error as exc:
        assert str(exc) and "\n" not in str(exc)
        return None


# -- expressions: a soup of the language's tokens and of Python's -------------------------
_TOKENS = [
    *NAMES, "1", "0.5", "1e308", "9" * 40, "-", "+", "*", "/", "(", ")", " and ", " or ",
    " not ", "<", "<=", "==", "!=", ">", "'x'", "true", "false", "null", "**", "//", "%",
    ".", "[", "]", ",", ":", "lambda", "__import__", "(a := 1)", "if", "else", " in ", "@",
    "~", "<<", "f'{a}'", "b'x'", "1j", "...",
]  # fmt: skip
token_soup = st.lists(st.sampled_from(_TOKENS), max_size=40).map(" ".join)
expressions = st.one_of(token_soup, st.text(max_size=120))


@FUZZ
@given(expressions, metrics)
@example(NAMES[0], {NAMES[0]: 10**400})  # found by DIAGNOSE_FUZZ=10: OverflowError
def test_any_condition_compiles_or_is_rejected_and_never_raises_when_evaluated(src, values):
    compiled = _compiled_or_rejected(compile_expr, src, ExprError)
    if compiled is None:
        return
    result = compiled(values)
    assert result is UNKNOWN or isinstance(result, (bool, float, str))
    if isinstance(result, float):
        assert math.isfinite(result)


ATTACKS = {
    "call": ("__import__('os').system('touch /tmp/pwned')", "function call"),
    "builtin call": ("open('/etc/shadow') == 'x'", "function call"),
    "attribute": ("busy_share_lock.__class__", "attribute"),
    "dunder chain": ("().__class__.__bases__[0].__subclasses__()", "function call"),
    "subscript": ("busy_share_lock[0]", "indexing"),
    "lambda": ("(lambda: 1) == 1", "lambda"),
    "comprehension": ("[x for x in busy_share_lock]", "comprehension"),
    "generator": ("(x for x in busy_share_lock)", "generator"),
    "walrus": ("(x := 1)", "assignment"),
    "f-string": ("f'{busy_share_lock}' == 'x'", "f-string"),
    "conditional": ("1 if busy_share_lock else 0", "conditional"),
    "power bomb": ("9 ** 9 ** 9", r"\*\*"),
    "shift bomb": ("1 << 100000000", "<<"),
    "string bomb": ("'x' * 1000000000 == 'y'", "strings can only be compared"),
    "string concat": ("'a' + 'b' == 'ab'", "strings can only be compared"),
    "membership": ("'a' in 'abc'", "in"),
    "huge integer": ("busy_share_lock > " + "9" * 400, "out of range"),
    "huge float": ("busy_share_lock > 1e999", "out of range"),
    "beyond 1e15": ("busy_share_lock > 1e16", "out of range"),
    "complex": ("busy_share_lock == 1j", "not allowed"),
    "bytes": ("busy_share_lock == b'x'", "not allowed"),
    "ellipsis": ("busy_share_lock == ...", "not allowed"),
    "bit not": ("~busy_share_lock > 0", "Invert"),
    "tuple": ("(busy_share_lock, 1) == 1", "tuple"),
    "long chain": ("<".join(["1"] * 150), "parts"),
    "deep not": ("not " * 240 + "busy_share_lock", "parts"),
    "deep minus": ("-" * 900 + "busy_share_lock", "parts"),
    "deep parentheses": ("(" * 300 + "busy_share_lock" + ")" * 300, "nested|parentheses"),
    "too long": ("busy_share_lock > 0 and " * 60 + "true", "characters"),
    "unknown metric": ("rm_rf > 0", "unknown metric"),
    "statement": ("import os", "syntax"),
    "two statements": ("busy_share_lock; 1", "syntax"),
}


@pytest.mark.parametrize("attack", ATTACKS)
def test_code_in_a_condition_is_rejected(attack):
    src, message = ATTACKS[attack]
    with pytest.raises(ExprError, match=message):
        compile_expr(src, KNOWN)


def test_the_largest_condition_allowed_evaluates_at_once():
    # close to the limits (1,000 characters) over values at the edge of the allowed range:
    # arithmetic that overflows is unknown, never an exception or a huge computation
    src = "*".join(["busy_share_lock"] * 40) + " > 1e15"
    compiled = compile_expr(src, KNOWN)
    assert compiled({"busy_share_lock": 1e300}) is UNKNOWN
    assert compiled({"busy_share_lock": 3.0}) is True


# -- message templates --------------------------------------------------------------------
_TEMPLATE_BITS = [
    "{", "}", "{{", "}}", ":", "!r", "!s", "[0]", ".__class__", ".1f", ".0%", "d", ">9999",
    "0", "x", *NAMES,
]  # fmt: skip
templates = st.one_of(
    st.lists(st.one_of(st.sampled_from(_TEMPLATE_BITS), st.text(max_size=3)), max_size=20).map(
        "".join
    ),
    st.text(max_size=80),
)


@FUZZ
@given(templates, metrics)
def test_any_message_compiles_or_is_rejected_and_renders_without_raising(src, values):
    t = _compiled_or_rejected(compile_template, src, TemplateError)
    if t is not None:
        assert isinstance(t.render(values), str)


@pytest.mark.parametrize(
    "src",
    [
        "{busy_share_lock.__class__.__init__.__globals__}",
        "{busy_share_lock[0]}",
        "{busy_share_lock!r}",
        "{busy_share_lock:{busy_share_lock}}",
        "{busy_share_lock:>1000000000}",
        "{busy_share_lock:.999f}",
        "{0}",
        "{}",
        "{busy_share_lock",
    ],
)
def test_code_in_a_message_is_rejected(src):
    with pytest.raises(TemplateError):
        compile_template(src, KNOWN)


@FUZZ
@given(metric_values, st.sampled_from(["", "d", ".1f", ".0%", ".3g", ".99f"]))
def test_any_value_formats(value, spec):
    assert isinstance(format_value(value, spec), str)


# -- TOML files and rule files ------------------------------------------------------------
_TOML_BITS = [
    "[[rule]]\n", "[rule]\n", "[[category]]\n", "[waits]\n", 'id = "team.x"\n',
    'category = "lock"\n', 'category = "nope"\n', 'title = "t"\n', 'summary = "s {busy_share_lock:.1f}"\n',
    'when = "busy_share_lock > 0.2"\n', 'when = "__import__(\'os\')"\n', 'score = "1e400"\n',
    'evidence = ["busy_share_lock", "nope"]\n', 'fixes = ["a", 1]\n', "advisory = 3\n",
    'name = "pre"\n', 'kind = "stage"\n', 'match = ["*tok*", {function = "a"}, {file = 3}]\n',
    'lock = ["acquire"]\n', "x = 1\n", "'''\n", "= \n", "[", "]", '"', "\n", "a = [[[[\n",
]  # fmt: skip
toml_texts = st.one_of(
    st.lists(st.sampled_from(_TOML_BITS), max_size=30).map("".join), st.text(max_size=200)
)
raw_bytes = st.binary(max_size=200)


def _write(tmp_path: Path, name: str, data: str | bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
    return path


def _names_file_and_line(message: str, path: Path) -> None:
    assert message.startswith(f"{path}:"), message
    assert message[len(str(path)) + 1 :].split(":", 1)[0].isdigit() or "cannot read" in message
    assert "\n" not in message


@FUZZ
@given(st.one_of(toml_texts, raw_bytes))
def test_any_toml_file_loads_or_names_file_and_line(tmp_path, data):
    path = _write(tmp_path, "any.toml", data)
    try:
        TomlFile.load(path)
    except BadRules as exc:
        _names_file_and_line(str(exc), path)


@FUZZ
@given(st.one_of(toml_texts, raw_bytes))
def test_any_rule_file_gives_rules_or_broken_entries_with_file_and_line(tmp_path, data):
    path = _write(tmp_path, "team.toml", data)
    rules, broken = load_file(path, KNOWN)
    for b in broken:
        _names_file_and_line(str(b), path)
    for r in rules:
        r.when(dict.fromkeys(NAMES, 0.5))  # a rule that loads can be evaluated


@FUZZ
@given(st.one_of(toml_texts, raw_bytes), st.lists(st.text(max_size=30), max_size=4))
def test_any_frames_file_loads_or_is_rejected_and_never_breaks_on_frames(tmp_path, data, frames):
    path = _write(tmp_path, "frames.toml", data)
    try:
        fr = load_frame_rules(path)
    except BadRules as exc:
        assert str(exc).startswith(str(path)), exc
        return
    fr.categorize(tuple(frames))
    for f in frames:
        fr.wait_kind(f)
        split_frame(f)


def _rule(when: str) -> str:
    return textwrap.dedent(
        f"""\
        # a team's rule file
        [[rule]]
        id = "team.ok"
        category = "lock"
        title = "fine"
        summary = "fine"
        when = "busy_share_lock > 0.2"

        [[rule]]
        id = "team.evil"
        category = "lock"
        title = "evil"
        summary = "evil"
        when = {when!r}
        """
    ).replace("\\'", "'")


@pytest.mark.parametrize("attack", ["call", "attribute", "power bomb", "huge integer", "deep not"])
def test_a_rule_file_with_an_attack_loads_its_good_rules_and_names_the_bad_line(tmp_path, attack):
    path = _write(tmp_path, "team.toml", _rule(ATTACKS[attack][0]))
    rules, broken = load_file(path, KNOWN)
    assert [r.id for r in rules] == ["team.ok"]
    assert len(broken) == 1
    assert str(broken[0]).startswith(f"{path}:14: team.evil: when: "), broken[0]


def test_limits_on_the_size_of_rule_files(tmp_path):
    big = _write(tmp_path, "big.toml", "# x\n" * (300 * 1024))
    with pytest.raises(BadRules, match=r"big.toml:1: file is \d+ bytes"):
        TomlFile.load(big)
    nested = _write(tmp_path, "nested.toml", "a = " + "[" * 100_000)
    with pytest.raises(BadRules, match=r"nested.toml:\d+: "):
        TomlFile.load(nested)
    one = 'id = "r{i}"\ncategory = "lock"\ntitle = "t"\nsummary = "s"\nwhen = "true"\n'
    many = "".join("[[rule]]\n" + one.format(i=i) for i in range(MAX_RULES_PER_FILE + 1))
    rules, broken = load_file(_write(tmp_path, "many.toml", many), KNOWN)
    assert rules == [] and "more than 500 rules" in str(broken[-1])


@pytest.mark.parametrize(
    ("patterns", "message"),
    [
        (['"*a*a*a*a*a*a*a*a*a"'], "more than 8"),
        (['"' + "x" * 201 + '"'], "1-200 characters"),
        (['""'], "1-200 characters"),
        (['{function = "a", eval = "b"}'], "takes 'function' and/or 'file'"),
        (["3"], "glob string or a table"),
        ([f'"p{i}"' for i in range(2001)], "more than 2000"),
    ],
)
def test_frame_patterns_out_of_bounds_are_rejected(tmp_path, patterns, message):
    body = ", ".join(patterns)
    path = _write(tmp_path, "frames.toml", f'[[category]]\nname = "pre"\nmatch = [{body}]\n')
    with pytest.raises(BadRules, match=message) as exc:
        load_frame_rules(path)
    assert str(exc.value).startswith(f"{path}:3: ")


WORST_GLOBS = """
import sys, tempfile
from pathlib import Path
from diagnose.analyse.frames import load_frame_rules
d = Path(tempfile.mkdtemp())
stars = ",".join('"*a*a*a*a*a*a*a*a' + "b" * 150 + str(i) + '"' for i in range(2000))
marks = ",".join('"' + "?" * 199 + str(i % 10) + '"' for i in range(2000))
(d / "frames.toml").write_text(
    f'[[category]]\\nname = "s"\\nmatch = [{stars}]\\n'
    f'[[category]]\\nname = "q"\\nkind = "kernel"\\nmatch = [{marks}]\\n'
    f'[waits]\\nlock = [{",".join(stars.split(",")[:500])}]\\n'
)
fr = load_frame_rules(d / "frames.toml")
for n in range(10):  # distinct near-miss frames of 500 to 5,000 characters
    name = "a" * (500 * (n + 1))
    fr.categorize((name + " (x.py:1)", name + " (libx.so)"))
    fr.wait_kind(name + " (x.py:1)")
print("done")
"""


def test_glob_patterns_cannot_blow_up_matching():
    # GIVEN the worst globs the limits allow (2,000 patterns of 8 stars, 200 '?'), WHEN
    # matched against long near-miss frame names, THEN matching finishes: fnmatch compiles
    # stars to atomic groups, so there is no backtracking blow-up. The timeout only guards
    # against a hang (a blow-up takes hours); speed is not asserted here.
    res = subprocess.run(
        [sys.executable, "-c", WORST_GLOBS],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        check=False,
    )
    assert res.returncode == 0 and res.stdout.strip() == "done", res.stderr
