"""Rule conditions: a tiny expression language, parsed and evaluated without eval().

Grammar (Python syntax, a strict subset): metric names, numbers, ``true``/``false``
(``True``/``False``), strings only as operands of ``==``/``!=``, ``+ - * /``, comparisons
(chains allowed), ``and``, ``or``, ``not``, parentheses. Nothing else: no calls, attributes,
subscripts, powers, lambdas or comprehensions. Expressions are bounded in length and size.

Evaluation uses three-valued logic: a metric that was not measured is *unknown*; a
comparison with an unknown is unknown; ``and`` is false if any side is false, else unknown
if any side is unknown; ``or`` mirrors it. A rule whose condition is unknown is reported as
"not evaluated" with the missing metrics, never as false.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any


class ExprError(ValueError):
    """The expression is not allowed; the message says what is wrong."""


class _Unknown:
    _instance: _Unknown | None = None

    def __new__(cls) -> _Unknown:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNKNOWN"

    def __bool__(self) -> bool:  # pragma: no cover - never used as a bool
        raise TypeError("UNKNOWN has no truth value")


UNKNOWN: Any = _Unknown()

MAX_SOURCE = 1000
MAX_NODES = 200
MAX_STRING = 200
MAX_NUMBER = 1e15

Value = Any
Evaluator = Callable[[Mapping[str, Any]], Value]


@dataclass(frozen=True)
class Compiled:
    source: str
    names: frozenset[str]
    evaluate: Evaluator

    def __call__(self, metrics: Mapping[str, Any]) -> Value:
        return self.evaluate(metrics)


_CMP = {
    ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b,
    ast.Gt: lambda a, b: a > b,
    ast.GtE: lambda a, b: a >= b,
    ast.Eq: lambda a, b: a == b,
    ast.NotEq: lambda a, b: a != b,
}
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def compile_expr(source: str, known: Mapping[str, Any] | None = None) -> Compiled:
    """Parse ``source``; names must be in ``known`` when it is given."""
    if not isinstance(source, str):
        raise ExprError("an expression must be a string")
    if len(source) > MAX_SOURCE:
        raise ExprError(f"expression is {len(source)} characters; the limit is {MAX_SOURCE}")
    text = source.replace("\n", " ").strip()
    # true/false/null spelled the TOML/JSON way are accepted too
    try:
        tree = ast.parse(text, mode="eval")
    except SyntaxError as exc:
        raise ExprError(f"syntax error: {exc.msg}") from None
    except (RecursionError, MemoryError, ValueError):
        raise ExprError("expression is nested too deeply") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise ExprError(f"expression has {count} parts; the limit is {MAX_NODES}")
    names: set[str] = set()
    fn = _build(tree.body, names, known)
    return Compiled(source, frozenset(names), fn)


def _build(
    node: ast.AST, names: set[str], known: Mapping[str, Any] | None, allow_str: bool = False
) -> Evaluator:
    if isinstance(node, ast.BoolOp):
        parts = [_build(v, names, known) for v in node.values]
        if isinstance(node.op, ast.And):
            return lambda m: _and([p(m) for p in parts])
        return lambda m: _or([p(m) for p in parts])
    if isinstance(node, ast.UnaryOp):
        inner = _build(node.operand, names, known)
        if isinstance(node.op, ast.Not):
            return lambda m: _not(inner(m))
        if isinstance(node.op, ast.USub):
            return lambda m: _neg(inner(m))
        if isinstance(node.op, ast.UAdd):
            return lambda m: _pos(inner(m))
        raise ExprError(f"operator {type(node.op).__name__} is not allowed")
    if isinstance(node, ast.BinOp):
        op = _ARITH.get(type(node.op))
        if op is None:
            raise ExprError(
                f"operator {_op_name(node.op)} is not allowed (only + - * / and comparisons)"
            )
        left, right = _build(node.left, names, known), _build(node.right, names, known)
        return lambda m: _arith(op, left(m), right(m))
    if isinstance(node, ast.Compare):
        ops = []
        for op_node in node.ops:
            f = _CMP.get(type(op_node))
            if f is None:
                raise ExprError(f"comparison {_op_name(op_node)} is not allowed")
            ops.append((f, type(op_node) in (ast.Eq, ast.NotEq)))
        operands = [node.left, *node.comparators]
        for i, opnd in enumerate(operands):
            if isinstance(opnd, ast.Constant) and isinstance(opnd.value, str):
                neighbours = [ops[j][1] for j in (i - 1, i) if 0 <= j < len(ops)]
                if not all(neighbours):
                    raise ExprError("strings can only be compared with == or !=")
        fns = [_build(o, names, known, allow_str=True) for o in operands]
        return lambda m: _compare(ops, [f(m) for f in fns])
    if isinstance(node, ast.Name):
        name = node.id
        lowered = {"true": True, "false": False, "True": True, "False": False}
        if name in lowered:
            value = lowered[name]
            return lambda m: value
        if name in ("null", "None"):
            return lambda m: UNKNOWN
        if known is not None and name not in known:
            raise ExprError(f"unknown metric {name!r}")
        names.add(name)
        return lambda m: _lookup(m, name)
    if isinstance(node, ast.Constant):
        v = node.value
        if isinstance(v, bool):
            return lambda m: v
        if isinstance(v, (int, float)):
            try:
                fv = float(v)
            except OverflowError:  # an integer literal of hundreds of digits
                fv = math.inf
            if not math.isfinite(fv) or abs(fv) > MAX_NUMBER:
                raise ExprError(
                    f"number {str(v)[:20]}{'...' if len(str(v)) > 20 else ''} is out of range"
                )
            return lambda m: fv
        if isinstance(v, str):
            if not allow_str:
                raise ExprError("strings can only be compared with == or !=")
            if len(v) > MAX_STRING:
                raise ExprError(f"string constants are limited to {MAX_STRING} characters")
            return lambda m: v
        raise ExprError(f"constant {v!r} is not allowed")
    raise ExprError(f"{_node_name(node)} is not allowed in a rule condition")


def _node_name(node: ast.AST) -> str:
    return {
        "Call": "a function call",
        "Attribute": "attribute access",
        "Subscript": "indexing",
        "Lambda": "a lambda",
        "ListComp": "a comprehension",
        "GeneratorExp": "a generator",
        "DictComp": "a comprehension",
        "SetComp": "a comprehension",
        "IfExp": "a conditional expression",
        "NamedExpr": "an assignment",
        "Starred": "unpacking",
        "JoinedStr": "an f-string",
        "List": "a list",
        "Tuple": "a tuple",
        "Dict": "a dict",
        "Set": "a set",
        "Await": "await",
        "Yield": "yield",
    }.get(type(node).__name__, type(node).__name__)


def _op_name(op: ast.AST) -> str:
    return {
        "Pow": "**",
        "FloorDiv": "//",
        "Mod": "%",
        "LShift": "<<",
        "RShift": ">>",
        "BitOr": "|",
        "BitAnd": "&",
        "BitXor": "^",
        "MatMult": "@",
        "In": "in",
        "NotIn": "not in",
        "Is": "is",
        "IsNot": "is not",
    }.get(type(op).__name__, type(op).__name__)


def _lookup(m: Mapping[str, Any], name: str) -> Value:
    v = m.get(name)
    if v is None:
        return UNKNOWN
    if isinstance(v, bool):
        return v
    if _is_num(v):
        try:
            fv = float(v)
        except OverflowError:  # an integer beyond float range is no measurement
            return UNKNOWN
        return fv if math.isfinite(fv) else UNKNOWN
    if isinstance(v, str):
        return v
    return UNKNOWN


def _and(vals: list[Value]) -> Value:
    if any(v is False for v in vals):
        return False
    if any(v is UNKNOWN for v in vals):
        return UNKNOWN
    return all(_truthy(v) for v in vals)


def _or(vals: list[Value]) -> Value:
    if any(v is not UNKNOWN and _truthy(v) for v in vals):
        return True
    if any(v is UNKNOWN for v in vals):
        return UNKNOWN
    return False


def _truthy(v: Value) -> bool:
    if v is UNKNOWN:
        return False
    if isinstance(v, bool):
        return v
    if _is_num(v):
        return bool(v != 0)
    return bool(v)


def _not(v: Value) -> Value:
    return UNKNOWN if v is UNKNOWN else not _truthy(v)


def _neg(v: Value) -> Value:
    return -v if _is_num(v) else UNKNOWN


def _pos(v: Value) -> Value:
    return v if _is_num(v) else UNKNOWN


def _arith(op: str, a: Value, b: Value) -> Value:
    if not (_is_num(a) and _is_num(b)):
        return UNKNOWN
    if op == "+":
        r = a + b
    elif op == "-":
        r = a - b
    elif op == "*":
        r = a * b
    else:
        if b == 0:
            return UNKNOWN
        r = a / b
    return r if math.isfinite(r) else UNKNOWN


def _compare(ops: list[tuple[Callable[[Any, Any], bool], bool]], vals: list[Value]) -> Value:
    result: Value = True
    for (f, is_eq), a, b in zip(ops, vals, vals[1:], strict=False):
        if a is UNKNOWN or b is UNKNOWN:
            result = UNKNOWN if result is not False else False
            continue
        if not is_eq and not (_is_num(a) and _is_num(b)):
            result = UNKNOWN if result is not False else False
            continue
        if not f(a, b):
            return False
    return result
