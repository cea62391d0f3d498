"""Layer 1 deterministic assertions: shape, strings and budgets.

docs/rules.md: Cheap deterministic assertions first.
"""

from __future__ import annotations

import json
import re
from abc import abstractmethod
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.assertions.schemas import JsonSchema

from redline.assertions.base import (
    COST_LENGTH,
    COST_METADATA,
    COST_PARSE,
    COST_REGEX,
    COST_STRING,
    Assertion,
    Check,
    Sample,
    Spec,
    register,
)
from redline.casemodel import REGEX_FLAGS
from redline.vocabulary.completion import BATCH_KEY
from redline.vocabulary.verdicts import AssertionStatus


def _preview(text: str, limit: int = 60) -> str:
    shown = text if len(text) <= limit else text[: limit - 3] + "..."
    return repr(shown)


@register("is-json")
class IsJson(Assertion):
    """The whole output is JSON (a sentence around it fails), optionally valid against a schema.

    The schema is the one the application uses, given as `value:` or `schema:`
    `file://schemas/name.json`.
    """

    cost = COST_PARSE
    structural = True

    def __init__(self, spec: Spec, validator: JsonSchema | None, schema_name: str) -> None:
        super().__init__(spec)
        self.validator = validator
        self.schema_name = schema_name

    @classmethod
    def parse(cls, spec: Spec) -> IsJson | None:
        schema = spec.value("schema")
        if schema is None:
            if spec.response_format is None:
                return cls(spec, None, "")
            validator = spec.validator(dict(spec.response_format.schema), "type")
            return None if validator is None else cls(spec, validator, "the response format")
        key = "schema" if spec.has("schema") else "value"
        validator = spec.validator(schema, key)
        if validator is None:
            return None
        source = spec.source("schema")
        return cls(spec, validator, source.name if source else "the schema")

    def check(self, sample: Sample) -> Check:
        error = sample.json_error
        if error is not None:
            return Check(
                AssertionStatus.FAILED,
                f"not JSON ({error}); output starts {_preview(sample.text, 40)}",
                final=not sample.json_prefix,
            )
        if self.validator is None:
            return Check.ok("valid JSON")
        problem = self.validator.problem(sample.json)
        if problem is not None:
            return Check.fail(f"JSON does not match {self.schema_name} {problem}")
        return Check.ok(f"valid JSON matching {self.schema_name}")


class _TextMatch(Assertion):
    cost = COST_STRING

    def __init__(self, spec: Spec, needle: str) -> None:
        super().__init__(spec)
        self.needle = needle
        #: The needle as reasons show it, made once rather than for every sample.
        self.shown = _preview(needle)

    @classmethod
    def parse(cls, spec: Spec) -> _TextMatch | None:
        needle = spec.text("value")
        return None if needle is None else cls(spec, needle)


@register("contains")
class Contains(_TextMatch):
    """The output contains `value` exactly (case-sensitive)."""

    def check(self, sample: Sample) -> Check:
        if self.needle in sample.text:
            return Check.ok(f"contains {self.shown}")
        return Check.fail(f"does not contain {self.shown}")


@register("icontains")
class IContains(_TextMatch):
    """The output contains `value`, ignoring case."""

    def check(self, sample: Sample) -> Check:
        if self.needle.casefold() in sample.text.casefold():
            return Check.ok(f"contains {self.shown} (ignoring case)")
        return Check.fail(f"does not contain {self.shown} (ignoring case)")


@register("not-contains")
class NotContains(_TextMatch):
    final = True
    """The output does not contain `value` (case-sensitive)."""

    def check(self, sample: Sample) -> Check:
        at = sample.text.find(self.needle)
        if at < 0:
            return Check.ok(f"does not contain {self.shown}")
        return Check.fail(f"contains {self.shown} at character {at}")


@register("equals")
class Equals(Assertion):
    """A string `value`: the output is exactly that text. Any other YAML value
    (number, list, mapping): the output parsed as JSON equals it."""

    cost = COST_STRING

    def __init__(self, spec: Spec, expected: Any, as_json: bool) -> None:
        super().__init__(spec)
        self.expected = expected
        self.as_json = as_json

    @classmethod
    def parse(cls, spec: Spec) -> Equals | None:
        expected = spec.value("value")
        return cls(spec, expected, as_json=not isinstance(expected, str))

    def check(self, sample: Sample) -> Check:
        if self.as_json:
            if sample.json_error is not None:
                return Check.fail(f"expected JSON equal to {self.expected!r}; output is not JSON")
            if sample.json == self.expected:
                return Check.ok("JSON equals the expected value")
            return Check.fail(f"JSON is {_preview(json.dumps(sample.json, ensure_ascii=False))}")
        if sample.text == self.expected:
            return Check.ok("equals the expected text")
        if sample.text.strip() == self.expected.strip():
            return Check.fail("differs from the expected text only in surrounding whitespace")
        return Check.fail(f"output {_preview(sample.text)} != {_preview(self.expected)}")


@register("regex")
class Regex(Assertion):
    """The output matches the Python regular expression `value` somewhere (re.search).

    `flags:` any of `i` (ignore case), `m` (multiline), `s` (dot matches newline), `x`.
    """

    cost = COST_REGEX

    def __init__(self, spec: Spec, pattern: re.Pattern[str]) -> None:
        super().__init__(spec)
        self.pattern = pattern

    @classmethod
    def parse(cls, spec: Spec) -> Regex | None:
        source = spec.text("value")
        flags = 0
        for letter in spec.text("flags") or "":
            flags |= REGEX_FLAGS[letter]
        return None if source is None else cls(spec, re.compile(source, flags))

    def check(self, sample: Sample) -> Check:
        match = self.pattern.search(sample.text)
        if match is None:
            return Check.fail(f"no match for /{self.pattern.pattern}/")
        return Check.ok(f"matched {_preview(match.group(0))} at character {match.start()}")


class _Budget(Assertion):
    """A maximum on one measured quantity; an unknown quantity fails, never passes."""

    final = True
    unit = ""

    def __init__(self, spec: Spec, limit: float) -> None:
        super().__init__(spec)
        self.threshold = limit

    #: What a budget of this kind looks like, for the hint of a wrongly typed one.
    example = "400"

    @classmethod
    def parse(cls, spec: Spec) -> _Budget | None:
        limit = spec.number("value")
        return None if limit is None else cls(spec, limit)

    @abstractmethod
    def measure(self, sample: Sample) -> float | None:
        """The measured quantity, or None when the provider did not report it."""

    def unknown(self, sample: Sample) -> str:
        return f"{self.unit} unknown: the provider did not report it"

    def check(self, sample: Sample) -> Check:
        limit = self.threshold
        assert limit is not None
        value = self.measure(sample)
        if value is None:
            return Check.fail(self.unknown(sample), None, limit)
        text = f"{value:g} {self.unit} (max {limit:g})"
        return Check.of(value <= limit, text, value, limit)


@register("max-chars")
class MaxChars(_Budget):
    cost = COST_LENGTH
    unit = "characters"

    def measure(self, sample: Sample) -> float | None:
        return len(sample.text)


@register("max-words")
class MaxWords(_Budget):
    cost = COST_LENGTH
    unit = "words"

    def measure(self, sample: Sample) -> float | None:
        return len(sample.words)


@register("max-tokens")
class MaxTokens(_Budget):
    cost = COST_METADATA
    unit = "output tokens"

    def measure(self, sample: Sample) -> float | None:
        tokens = sample.completion.output_tokens
        return None if tokens is None else float(tokens)


@register("max-latency-ms")
class MaxLatency(_Budget):
    cost = COST_METADATA
    unit = "ms"
    example = "2000"

    def measure(self, sample: Sample) -> float | None:
        return sample.completion.latency_ms

    def check(self, sample: Sample) -> Check:
        if sample.completion.latency_ms is None and BATCH_KEY in sample.completion.extra:
            # A batch's answers have no latency of their own: nothing to hold the bar to.
            return Check(AssertionStatus.SKIPPED, "not measured: the answer came in a batch")
        result = super().check(sample)
        if result.score is not None:
            return Check(
                result.status,
                f"{result.score:.0f} ms (max {self.threshold:g})",
                result.score,
                result.threshold,
            )
        return result


@register("max-cost")
class MaxCost(_Budget):
    cost = COST_METADATA
    unit = "cost"
    example = "0.002"

    def measure(self, sample: Sample) -> float | None:
        return sample.completion.cost

    def unknown(self, sample: Sample) -> str:
        model = sample.completion.model or "this model"
        return (
            f"cost unknown for {model}: pin its price in the config's prices table "
            "or drop max-cost (an unknown cost never passes)"
        )
