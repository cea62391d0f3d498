"""`python`: one expression over `output`, `json` and `vars`, checked at load time.

The expression sees only those three names, a few pure builtins and `re`
(search, match, fullmatch, findall). Imports, names or attributes starting
with an underscore, and `str.format` tricks are refused at load time. This
keeps case files from reaching into the process by accident; it is not a
sandbox for untrusted code. Any exception while evaluating is a failed
assertion with the exception's message, never a crash.
"""

from __future__ import annotations

import ast
import builtins
import re
from types import CodeType, SimpleNamespace
from typing import Any

from redline.assertions.base import COST_PYTHON, Assertion, Check, Sample, Spec, register

_BUILTINS: dict[str, Any] = {
    name: getattr(builtins, name)
    for name in (
        "abs",
        "all",
        "any",
        "bool",
        "dict",
        "enumerate",
        "float",
        "int",
        "isinstance",
        "len",
        "list",
        "max",
        "min",
        "round",
        "set",
        "sorted",
        "str",
        "sum",
        "tuple",
        "zip",
    )
}
_BUILTINS.update({"True": True, "False": False, "None": None})
_RE = SimpleNamespace(
    search=re.search,
    match=re.match,
    fullmatch=re.fullmatch,
    findall=re.findall,
    IGNORECASE=re.IGNORECASE,
    I=re.IGNORECASE,
)
_NAMES = frozenset({"output", "json", "vars", "re", *_BUILTINS})
_FORBIDDEN_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "mro",
        "gi_frame",
        "gi_code",
        "cr_frame",
        "ag_frame",
        "tb_frame",
        "f_back",
        "f_globals",
        "f_locals",
        "f_builtins",
    }
)


def _refusal_of(tree: ast.Expression) -> tuple[str, ast.AST] | None:
    """The first construct the restricted namespace does not allow, with its node."""
    bound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }
    bound |= {
        a.arg
        for n in ast.walk(tree)
        if isinstance(n, ast.arguments)
        for a in (*n.posonlyargs, *n.args, *n.kwonlyargs)
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if node.id.startswith("_"):
                return f"name {node.id!r} is not allowed", node
            if node.id not in _NAMES and node.id not in bound:
                allowed = "output, json, vars, re"
                return f"unknown name {node.id!r} (available: {allowed} and basic builtins)", node
        elif isinstance(node, ast.Attribute):
            if node.attr.startswith("_") or node.attr in _FORBIDDEN_ATTRIBUTES:
                return f"attribute {node.attr!r} is not allowed", node
        elif isinstance(node, ast.NamedExpr | ast.Await | ast.Yield | ast.YieldFrom):
            return f"{type(node).__name__} is not allowed", node
    return None


@register("python")
class PythonExpr(Assertion):
    """Passes when the expression is truthy, e.g. `json["total_idr"] == 12500000`."""

    cost = COST_PYTHON

    def __init__(self, spec: Spec, source: str, code: CodeType) -> None:
        super().__init__(spec)
        self.source = source
        self.code = code

    @classmethod
    def parse(cls, spec: Spec) -> PythonExpr | None:
        source = spec.text("value")
        if source is None:
            return None
        text = source.strip()
        tree = ast.parse(text, mode="eval")
        refused = _refusal_of(tree)
        if refused is not None:
            message, node = refused
            column = getattr(node, "col_offset", 0) + 1
            spec.problem(
                f"{message} (column {column} of the expression)",
                "only output, json, vars, re and basic builtins are available",
                "value",
            )
            return None
        return cls(spec, text, compile(tree, f"<python assertion {spec.index}>", "eval"))

    def check(self, sample: Sample) -> Check:
        namespace = {
            "__builtins__": _BUILTINS,
            "output": sample.text,
            "json": sample.json,
            "vars": dict(sample.vars),
            "re": _RE,
        }
        try:
            value = eval(self.code, namespace)
        except Exception as exc:
            return Check.fail(f"{self.source} raised {type(exc).__name__}: {exc}")
        if value:
            return Check.ok(f"{self.source} is true")
        return Check.fail(f"{self.source} is {value!r}")
