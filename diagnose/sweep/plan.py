"""What the user asked for, validated: the steps, the settings to vary, the load command.

Everything here is pure and raises :class:`~diagnose.errors.UsageError` (exit code 2) with
one line naming the option and what is wrong with it.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from diagnose.errors import UsageError

MAX_STEPS = 20
MAX_USERS = 10_000
MAX_VALUES = 10

#: The placeholders a load command may use (docs/sweep.md, "Any load generator").
PLACEHOLDERS = ("users", "duration", "host")
_PLACEHOLDER = re.compile(r"\{([a-z_]+)\}")
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_SLUG_UNSAFE = re.compile(r"[^A-Za-z0-9_.=+-]")


def parse_steps(text: str) -> tuple[int, ...]:
    """'1,2,4,8' -> (1, 2, 4, 8): whole numbers of concurrent users, rising."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if len(items) < 2:
        raise UsageError(
            f"--steps needs at least two concurrency levels (e.g. 1,2,4,8,16), not {text!r}"
        )
    if len(items) > MAX_STEPS:
        raise UsageError(f"--steps: at most {MAX_STEPS} steps, not {len(items)}")
    steps: list[int] = []
    for item in items:
        if not item.isdigit():
            raise UsageError(f"--steps: {item!r} is not a whole number of users")
        n = int(item)
        if not 1 <= n <= MAX_USERS:
            raise UsageError(f"--steps: {n} users is outside 1..{MAX_USERS}")
        if steps and n <= steps[-1]:
            raise UsageError(f"--steps must rise: {n} comes after {steps[-1]}")
        steps.append(n)
    return tuple(steps)


@dataclass(frozen=True)
class Setting:
    """One configuration of the service: the whole sweep runs once per setting."""

    name: str  # "default", or "NAME=value"
    slug: str  # its directory under steps/
    var: str | None = None
    value: str | None = None


DEFAULT_SETTING = Setting("default", "default")


def parse_vary(text: str) -> tuple[str, tuple[str, ...]]:
    """'OMP_NUM_THREADS=1,2,4' -> ('OMP_NUM_THREADS', ('1', '2', '4'))."""
    name, sep, rest = str(text).partition("=")
    name = name.strip()
    if not sep or not _NAME.match(name):
        raise UsageError(
            f"--vary takes NAME=v1,v2,... with NAME a variable or placeholder name, not {text!r}"
        )
    values = tuple(v.strip() for v in rest.split(","))
    if not values or any(not v for v in values):
        raise UsageError(f"--vary {name}: give the values separated by commas, none empty")
    if len(values) > MAX_VALUES:
        raise UsageError(f"--vary {name}: at most {MAX_VALUES} values, not {len(values)}")
    if len(set(values)) != len(values):
        raise UsageError(f"--vary {name}: a value is listed twice")
    return name, values


def settings_for(vary: tuple[str, tuple[str, ...]] | None) -> list[Setting]:
    """The settings to sweep: one per --vary value (the first is the baseline), or the default."""
    if vary is None:
        return [DEFAULT_SETTING]
    name, values = vary
    out = []
    for value in values:
        label = f"{name}={value}"
        out.append(Setting(label, _SLUG_UNSAFE.sub("_", label)[:80], name, value))
    if len({s.slug for s in out}) != len(out):
        raise UsageError(f"--vary {name}: two values give the same directory name")
    return out


def service_command(argv: Sequence[str], setting: Setting) -> tuple[list[str], dict[str, str]]:
    """The command and extra environment for ``setting``: ``{NAME}`` in the command is
    replaced by the value (a flag of the service); without it, NAME=value goes into the
    command's environment (OMP_NUM_THREADS=1)."""
    if setting.var is None or setting.value is None:
        return list(argv), {}
    mark = "{" + setting.var + "}"
    if any(mark in a for a in argv):
        return [a.replace(mark, setting.value) for a in argv], {}
    return list(argv), {setting.var: setting.value}


@dataclass(frozen=True)
class LoadSpec:
    """The load generator: a locustfile (locust, first-class) or a command template."""

    kind: str  # "locust" or "command"
    locustfile: Path | None = None
    template: tuple[str, ...] = ()
    host: str | None = None
    parser: str = "auto"  # for commands: "auto", "wrk" or "json"

    @property
    def tool(self) -> str:
        if self.kind == "locust":
            return "locust"
        return Path(self.template[0]).name if self.template else "?"

    def describe(self) -> str:
        if self.kind == "locust":
            return f"locust -f {self.locustfile}"
        return shlex.join(self.template)


def parse_load(text: str, host: str | None = None, parser: str = "auto") -> LoadSpec:
    """``--load``: a locustfile (``*.py``), or a command containing ``{users}`` and
    ``{duration}`` (and ``{host}`` if it wants --host), run without a shell."""
    text = str(text or "").strip()
    if not text:
        raise UsageError("--load is required: a locustfile (*.py) or a command with {users}")
    if parser not in ("auto", "wrk", "json"):
        raise UsageError(f"--load-format: choose auto, wrk or json, not {parser!r}")
    if host is not None and not re.match(r"^https?://[^\s/]+", host):
        raise UsageError(f"--host must be a URL like http://127.0.0.1:8000, not {host!r}")
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        raise UsageError(f"--load: cannot split the command: {exc}") from None
    if len(argv) == 1 and argv[0].endswith(".py") and "{" not in argv[0]:
        path = Path(argv[0]).expanduser()
        if not path.is_file():
            raise UsageError(f"--load: no such locustfile: {path}")
        if "," in str(path.resolve()):  # locust -f takes a comma-separated list
            raise UsageError(f"--load: locust cannot load a file whose path has a comma: {path}")
        return LoadSpec("locust", locustfile=path.resolve(), host=host)
    found = set(_PLACEHOLDER.findall(text))
    unknown = sorted(found - set(PLACEHOLDERS))
    if unknown:
        raise UsageError(
            f"--load: unknown placeholder {{{unknown[0]}}}; known: "
            + ", ".join("{" + p + "}" for p in PLACEHOLDERS)
        )
    for needed in ("users", "duration"):
        if needed not in found:
            raise UsageError(
                f"--load: the command must contain {{{needed}}} (or give a locustfile *.py), "
                f"e.g. 'wrk -t2 -c{{users}} -d{{duration}}s {{host}}/'"
            )
    if "host" in found and host is None:
        raise UsageError("--load uses {host}: give --host URL")
    return LoadSpec("command", template=tuple(argv), host=host, parser=parser)


def fill_template(template: Sequence[str], values: Mapping[str, str]) -> list[str]:
    """Replace the known placeholders in each argument; other braces are left alone."""

    def sub(m: re.Match[str]) -> str:
        return values.get(m.group(1), m.group(0))

    return [_PLACEHOLDER.sub(sub, a) for a in template]


def whole_seconds(seconds: float) -> int:
    """Durations handed to a command template are whole seconds (wrk takes no fractions)."""
    return max(1, round(seconds))
