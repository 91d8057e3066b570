import pytest

from diagnose.verdict.expr import UNKNOWN, ExprError, compile_expr

KNOWN = {"a": 1, "b": 1, "c": 1, "name": 1}


def ev(src, **metrics):
    return compile_expr(src, KNOWN)(metrics)


def test_arithmetic_and_comparisons():
    assert ev("a + b * 2 > 4", a=1, b=2) is True
    assert ev("a / b", a=1, b=4) == 0.25
    assert ev("0.1 < a <= 0.5", a=0.5) is True
    assert ev("0.1 < a <= 0.5", a=0.6) is False
    assert ev("not a > 1", a=0) is True
    assert ev("-a < 0", a=2) is True
    assert ev("name == 'x' and a >= 1", name="x", a=1) is True


def test_unknown_propagates_three_valued():
    # a missing metric is unknown, never false
    assert ev("a > 1") is UNKNOWN
    assert ev("a > 1 and b > 1", b=0) is False  # false wins over unknown in 'and'
    assert ev("a > 1 and b > 1", b=2) is UNKNOWN
    assert ev("a > 1 or b > 1", b=2) is True  # true wins over unknown in 'or'
    assert ev("a > 1 or b > 1", b=0) is UNKNOWN
    assert ev("not a") is UNKNOWN
    assert ev("a / b > 1", a=1, b=0) is UNKNOWN  # division by zero is unknown
    assert ev("a == null") is UNKNOWN


@pytest.mark.parametrize(
    ("src", "message"),
    [
        ("__import__('os').system('id')", "function call"),
        ("a.__class__", "attribute"),
        ("a[0]", "indexing"),
        ("9 ** 9 ** 9", r"\*\*"),
        ("'x' * 100000000", "strings can only be compared"),
        ("'x' < a", "strings can only be compared"),
        ("[x for x in a]", "comprehension"),
        ("lambda: 1", "lambda"),
        ("a if b else c", "conditional"),
        ("(a := 1)", "assignment"),
        ("unknown_metric > 1", "unknown metric"),
        ("a %% b", "syntax"),
        ("a % b", "%"),
        ("1e400 > a", "out of range"),
        ("a > " + "+".join(["1"] * 300), "parts"),
        ("(" * 2000 + "a" + ")" * 2000, "characters"),
        ("f'{a}' == 'x'", "f-string"),
        ("a in b", "in"),
    ],
)
def test_code_is_rejected(src, message):
    with pytest.raises(ExprError, match=message):
        compile_expr(src, KNOWN)


def test_names_are_collected():
    assert compile_expr("a > 1 and (b < c or true)", KNOWN).names == {"a", "b", "c"}
