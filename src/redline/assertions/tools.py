"""Layer 1 checks of the function calls a model made (every step of a tool loop).

`tool-called` a function by name, optionally with arguments matching a JSON Schema or a
Python expression over `args`, `times` such calls, the first being call number `order`;
`tool-not-called` a name; `no-tool-call`; `tool-args-valid`: every call names a tool the
suite declares, with arguments valid against its parameter schema. Arguments that are not
a JSON object fail every check that reads them.
"""

from __future__ import annotations

from types import CodeType
from typing import TYPE_CHECKING

from redline.assertions.base import COST_PARSE, Assertion, Check, Sample, Spec, register
from redline.assertions.python_expr import evaluate
from redline.vocabulary.messages import ToolCall

if TYPE_CHECKING:
    from redline.assertions.schemas import JsonSchema


def _names(calls: tuple[ToolCall, ...]) -> str:
    return ", ".join(c.name for c in calls) or "none"


@register("tool-called")
class ToolCalled(Assertion):
    """The function was called, with arguments that pass the given checks."""

    cost = COST_PARSE

    def __init__(
        self,
        spec: Spec,
        name: str,
        validator: JsonSchema | None,
        code: tuple[str, CodeType] | None,
        times: int | None,
        order: int | None,
    ) -> None:
        super().__init__(spec)
        self.name = name
        self.validator = validator
        self.code = code
        self.times = times
        self.order = order

    @classmethod
    def parse(cls, spec: Spec) -> ToolCalled | None:
        before = len(spec.problems)
        name = spec.text("value")
        schema = spec.value("args")
        validator = None if schema is None else spec.validator(schema, "args")
        source = spec.text("python")
        code = None
        if source is not None:
            text = source.strip()
            code = (text, compile(text, f"<tool-called {spec.index}: python>", "eval"))
        times, order = spec.integer("times"), spec.integer("order")
        if len(spec.problems) > before or name is None:
            return None
        return cls(spec, name, validator, code, times, order)

    def check(self, sample: Sample) -> Check:
        calls = sample.tool_calls
        named = [i for i, c in enumerate(calls, start=1) if c.name == self.name]
        if not named:
            return Check.fail(f"{self.name} was not called (calls: {_names(calls)})")
        matching: list[int] = []
        misses: list[str] = []
        for position in named:
            why = self._mismatch(position, sample)
            if why is None:
                matching.append(position)
            else:
                misses.append(f"call {position}: {why}")
        if not matching:
            return Check.fail(f"{self.name} was called but not as asked: {'; '.join(misses)}")
        if self.times is not None and len(matching) != self.times:
            return Check.fail(
                f"{self.name} was called {len(matching)} time(s) as asked, not {self.times}"
            )
        if self.order is not None and matching[0] != self.order:
            return Check.fail(
                f"{self.name} was call {matching[0]} of {len(calls)}, not call {self.order} "
                f"(calls: {_names(calls)})"
            )
        return Check.ok(f"{self.name} called as asked ({len(matching)} of {len(calls)} calls)")

    def _mismatch(self, position: int, sample: Sample) -> str | None:
        if self.validator is None and self.code is None:
            return None
        args, error = sample.arguments(position)
        if error is not None:
            return error
        if self.validator is not None:
            problem = self.validator.problem(args)
            if problem is not None:
                return f"arguments do not match the schema {problem}"
        if self.code is not None:
            source, code = self.code
            try:
                value = evaluate(code, {"args": args, "vars": dict(sample.vars)})
            except Exception as exc:
                return f"{source} raised {type(exc).__name__}: {exc}"
            if not value:
                return f"{source} is {value!r}"
        return None

    def describe(self) -> str:
        return f"tool-called {self.name}"


@register("tool-not-called")
class ToolNotCalled(Assertion):
    """The function was never called."""

    cost = COST_PARSE

    def __init__(self, spec: Spec, name: str) -> None:
        super().__init__(spec)
        self.name = name

    @classmethod
    def parse(cls, spec: Spec) -> ToolNotCalled | None:
        name = spec.text("value")
        return None if name is None else cls(spec, name)

    def check(self, sample: Sample) -> Check:
        count = sum(c.name == self.name for c in sample.tool_calls)
        if count:
            return Check.fail(f"{self.name} was called {count} time(s)")
        return Check.ok(f"{self.name} was not called")


@register("no-tool-call")
class NoToolCall(Assertion):
    """The model answered without calling any function (`value: false`: it called one)."""

    cost = COST_PARSE

    def __init__(self, spec: Spec, expected: bool) -> None:
        super().__init__(spec)
        self.expected = expected

    @classmethod
    def parse(cls, spec: Spec) -> NoToolCall | None:
        expected = spec.boolean("value")
        return None if expected is None else cls(spec, expected)

    def check(self, sample: Sample) -> Check:
        calls = sample.tool_calls
        if not self.expected:
            if calls:
                return Check.ok(f"{len(calls)} function call(s): {_names(calls)}")
            return Check.fail("no function call")
        if calls:
            return Check.fail(f"{len(calls)} function call(s): {_names(calls)}")
        return Check.ok("no function call")


@register("tool-args-valid")
class ToolArgsValid(Assertion):
    """Every call (of one tool, when `value` names it) names a declared tool and its
    arguments validate against that tool's parameter schema."""

    cost = COST_PARSE
    structural = True

    def __init__(self, spec: Spec, validators: dict[str, JsonSchema], only: str | None) -> None:
        super().__init__(spec)
        self.validators = validators
        self.only = only

    @classmethod
    def parse(cls, spec: Spec) -> ToolArgsValid | None:
        only = spec.text("value")
        validators: dict[str, JsonSchema] = {}
        for tool in spec.tools:
            validator = spec.validator(dict(tool.parameters), "type")
            if validator is None:
                return None
            validators[tool.name] = validator
        return cls(spec, validators, only)

    def check(self, sample: Sample) -> Check:
        calls = [
            (i, c)
            for i, c in enumerate(sample.tool_calls, start=1)
            if self.only is None or c.name == self.only
        ]
        for position, call in calls:
            validator = self.validators.get(call.name)
            if validator is None:
                declared = ", ".join(self.validators)
                return Check.fail(
                    f"call {position} names {call.name!r}, which is not declared ({declared})"
                )
            args, error = sample.arguments(position)
            if error is not None:
                return Check.fail(f"call {position} ({call.name}): {error}")
            problem = validator.problem(args)
            if problem is not None:
                return Check.fail(f"call {position} ({call.name}): arguments invalid {problem}")
        return Check.ok(f"{len(calls)} call(s), all declared and valid")


__all__ = ["NoToolCall", "ToolArgsValid", "ToolCalled", "ToolNotCalled"]
