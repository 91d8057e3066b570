"""diagnose sweep's options, validated: steps, --vary, the load command. Each bad value is
one line naming the option (exit code 2)."""

from __future__ import annotations

import pytest

from diagnose.errors import ExitCode, UsageError
from diagnose.sweep.plan import (
    DEFAULT_SETTING,
    fill_template,
    parse_load,
    parse_steps,
    parse_vary,
    service_command,
    settings_for,
    whole_seconds,
)


def test_steps_parse():
    assert parse_steps("1,2,4,8,16,32") == (1, 2, 4, 8, 16, 32)
    assert parse_steps(" 1, 3 ,10 ") == (1, 3, 10)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("4", "at least two"),
        ("", "at least two"),
        ("1,2,x", "'x' is not a whole number"),
        ("1,-2", "'-2' is not a whole number"),
        ("1,2.5", "'2.5' is not a whole number"),
        ("0,1", "0 users is outside"),
        ("1,20000", "20000 users is outside"),
        ("1,4,2", "must rise: 2 comes after 4"),
        ("1,1", "must rise"),
        (",".join(str(i) for i in range(1, 30)), "at most 20 steps"),
    ],
)
def test_bad_steps_are_one_line_usage_errors(text, says):
    with pytest.raises(UsageError) as exc:
        parse_steps(text)
    assert says in str(exc.value) and "\n" not in str(exc.value)
    assert exc.value.exit_code == ExitCode.USAGE


def test_vary_parses_and_names_settings():
    name, values = parse_vary("OMP_NUM_THREADS=4,1,2")
    assert (name, values) == ("OMP_NUM_THREADS", ("4", "1", "2"))
    settings = settings_for((name, values))
    assert [s.name for s in settings] == [
        "OMP_NUM_THREADS=4",
        "OMP_NUM_THREADS=1",
        "OMP_NUM_THREADS=2",
    ]
    assert settings[0].slug == "OMP_NUM_THREADS=4"
    assert settings_for(None) == [DEFAULT_SETTING]
    # a value with characters that do not belong in a directory name
    (odd,) = settings_for(("MODE", ("a/b c",)))
    assert odd.slug == "MODE=a_b_c" and odd.value == "a/b c"


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("OMP_NUM_THREADS", "NAME=v1,v2"),
        ("1X=1,2", "NAME=v1,v2"),
        ("A-B=1,2", "NAME=v1,v2"),
        ("X=1,,2", "none empty"),
        ("X=", "none empty"),
        ("X=1,1", "listed twice"),
        ("X=" + ",".join(str(i) for i in range(11)), "at most 10"),
    ],
)
def test_bad_vary(text, says):
    with pytest.raises(UsageError, match=says):
        parse_vary(text)


def test_values_collapsing_to_one_directory_are_refused():
    with pytest.raises(UsageError, match="same directory"):
        settings_for(("X", ("a/b", "a b")))


def test_service_command_uses_a_placeholder_or_the_environment():
    (flag,) = settings_for(("intra_op", ("2",)))
    argv, env = service_command(["python", "s.py", "--intra-op", "{intra_op}"], flag)
    assert argv == ["python", "s.py", "--intra-op", "2"] and env == {}
    argv, env = service_command(["python", "s.py", "--x={intra_op}"], flag)
    assert argv == ["python", "s.py", "--x=2"]
    (var,) = settings_for(("OMP_NUM_THREADS", ("1",)))
    argv, env = service_command(["python", "s.py"], var)
    assert argv == ["python", "s.py"] and env == {"OMP_NUM_THREADS": "1"}
    assert service_command(["a"], DEFAULT_SETTING) == (["a"], {})


def test_load_locustfile(tmp_path):
    f = tmp_path / "lf.py"
    f.write_text("")
    spec = parse_load(str(f), "http://127.0.0.1:8000")
    assert spec.kind == "locust" and spec.locustfile == f.resolve() and spec.tool == "locust"
    assert spec.host == "http://127.0.0.1:8000"


def test_load_missing_locustfile(tmp_path):
    with pytest.raises(UsageError, match="no such locustfile"):
        parse_load(str(tmp_path / "nope.py"))
    odd = tmp_path / "a,b.py"
    odd.write_text("")
    with pytest.raises(UsageError, match="has a comma"):
        parse_load(str(odd))


def test_load_command_template():
    spec = parse_load("wrk -t2 -c{users} -d{duration}s --latency {host}/infer", "http://h:1")
    assert spec.kind == "command" and spec.tool == "wrk" and spec.parser == "auto"
    argv = fill_template(spec.template, {"users": "8", "duration": "3", "host": "http://h:1"})
    assert argv == ["wrk", "-t2", "-c8", "-d3s", "--latency", "http://h:1/infer"]
    # braces that are not placeholders stay (a JSON body, say)
    spec = parse_load("""hey -c {users} -z {duration}s -d '{"a": 1}' http://x/""")
    assert fill_template(spec.template, {"users": "2", "duration": "1"})[-2] == '{"a": 1}'


@pytest.mark.parametrize(
    ("load", "host", "fmt", "says"),
    [
        ("", None, "auto", "--load is required"),
        ("wrk -d{duration}s http://x/", None, "auto", "must contain {users}"),
        ("wrk -c{users} http://x/", None, "auto", "must contain {duration}"),
        ("wrk -c{user} -d{duration}s x", None, "auto", "unknown placeholder {user}"),
        ("wrk -c{users} -d{duration}s {host}", None, "auto", "give --host"),
        ("wrk -c{users} -d{duration}s 'x", None, "auto", "cannot split"),
        ("wrk -c{users} -d{duration}s x", "ftp://x", "auto", "--host must be a URL"),
        ("wrk -c{users} -d{duration}s x", None, "csv", "--load-format"),
        ("locust", None, "auto", "or give a locustfile *.py"),
    ],
)
def test_bad_load(load, host, fmt, says):
    with pytest.raises(UsageError) as exc:
        parse_load(load, host, fmt)
    assert says in str(exc.value)


def test_whole_seconds():
    assert whole_seconds(2.4) == 2 and whole_seconds(2.6) == 3 and whole_seconds(0.2) == 1
