"""`python`: one expression over `output`, `json` and `vars`, checked at load time.

The expression sees only those three names, a few pure builtins and `re`
(search, match, fullmatch, findall). Imports, names or attributes starting
with an underscore, and `str.format` tricks are refused at load time. This
keeps case files from reaching into the process by accident; it is not a
sandbox for untrusted code. Any exception while evaluating is a failed
assertion with the exception's message, never a crash.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from types import CodeType, SimpleNamespace
from typing import Any

from redline.assertions.base import COST_PYTHON, Assertion, Check, Sample, Spec, register
from redline.casemodel.expressions import BUILTIN_NAMES

_BUILTINS: dict[str, Any] = {name: getattr(builtins, name) for name in BUILTIN_NAMES}
_BUILTINS.update({"True": True, "False": False, "None": None})
_RE = SimpleNamespace(
    search=re.search,
    match=re.match,
    fullmatch=re.fullmatch,
    findall=re.findall,
    IGNORECASE=re.IGNORECASE,
    I=re.IGNORECASE,
)


def evaluate(code: CodeType, names: Mapping[str, Any]) -> Any:
    """The expression's value with `names` bound (exceptions propagate to the caller)."""
    return eval(code, {"__builtins__": _BUILTINS, "re": _RE, **names})


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
        return cls(spec, text, compile(text, f"<python assertion {spec.index}>", "eval"))

    def check(self, sample: Sample) -> Check:
        namespace = {"output": sample.text, "json": sample.json, "vars": dict(sample.vars)}
        try:
            value = evaluate(self.code, namespace)
        except Exception as exc:
            return Check.fail(f"{self.source} raised {type(exc).__name__}: {exc}")
        if value:
            return Check.ok(f"{self.source} is true")
        return Check.fail(f"{self.source} is {value!r}")
