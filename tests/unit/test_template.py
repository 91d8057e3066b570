import pytest

from diagnose.verdict.template import TemplateError, compile_template


def test_render_with_specs_and_missing_values():
    t = compile_template(
        "{a} threads waited {b:.1f} s ({c:.0%}); {d}", {"a": 1, "b": 1, "c": 1, "d": 1}
    )
    assert (
        t.render({"a": 3, "b": 4.125, "c": 0.5, "d": None}) == "3 threads waited 4.1 s (50%); n/a"
    )
    assert t.names == {"a", "b", "c", "d"}


@pytest.mark.parametrize(
    "src",
    ["{a.__class__}", "{a[0]}", "{a!r}", "{a:{b}}", "{a:>1000000}", "{0}", "{}", "{a", "{nope}"],
)
def test_unsafe_or_bad_templates_are_rejected(src):
    with pytest.raises(TemplateError):
        compile_template(src, {"a": 1, "b": 1})
