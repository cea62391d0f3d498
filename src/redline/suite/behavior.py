"""`assert_behavior(output)`: redline's assertions as a chain inside ordinary tests.

    assert_behavior(out).mentions("refund").not_mentions("lawsuit").tone("empathetic")

Each method returns the chain and raises `AssertionError` at the first failure
with the score, the threshold and the sentence concerned. `check_behavior`
runs every check and raises once at the end with all results (the seed's
limitation: a chain that stops at the first failure hides the rest). The
checks are the same implementations the YAML case types use.

When a model backend is missing, the check raises `BehaviorUnavailable`
(never a silent pass); the pytest plugin reports such a test as skipped with
the reason.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import yaml

from redline.assertions import deterministic, load_optional_types
from redline.assertions.base import Assertion, Check, Sample, Spec, assertion_type
from redline.assertions.schemas import JsonSchema
from redline.casemodel import DEFAULT_MENTION_THRESHOLD, DEFAULT_TONE_MARGIN
from redline.casemodel.python_data import Output, answer_of, read_python
from redline.config import Config, load_config
from redline.documents.yamlsource import load_text
from redline.textsafe import one_line
from redline.vocabulary.messages import ToolDefinition
from redline.vocabulary.verdicts import AssertionStatus

#: Seed 000's bars for degenerate output: loops compress below 0.35, repeat trigrams.
DEFAULT_MIN_COMPRESSION = 0.35
DEFAULT_MIN_DISTINCT = 0.70

_WHERE = "<assert_behavior>"
#: A concept as `mentions` takes it: text, its renderings, or {language code: rendering}.
ConceptValue = str | list[str] | dict[str, str]

load_optional_types()


class BehaviorUnavailable(RuntimeError):
    """A check could not be evaluated (its model backend is missing): neither pass nor fail."""


@dataclass(frozen=True)
class BehaviorResult:
    """One check on one output: what the pytest plugin records and baselines."""

    assertion: str
    target: str
    status: AssertionStatus
    reason: str
    score: float | None = None
    threshold: float | None = None

    def numbers(self) -> str:
        score = "-" if self.score is None else f"{self.score:.3f}"
        threshold = "-" if self.threshold is None else f"{self.threshold:.3f}"
        return f"score {score} threshold {threshold}"

    def line(self) -> str:
        head = f"{self.status.value:<11} {self.assertion} {self.target!r}"
        return f"{head} {self.numbers()}: {self.reason}"


Observer = Callable[["BehaviorAssertion", BehaviorResult], None]
_OBSERVER: contextvars.ContextVar[Observer | None] = contextvars.ContextVar(
    "redline_behavior_observer", default=None
)


@contextmanager
def observe_results(observer: Observer) -> Iterator[None]:
    """Call `observer(chain, result)` for every check run inside the block (the pytest plugin)."""
    token = _OBSERVER.set(observer)
    try:
        yield
    finally:
        _OBSERVER.reset(token)


class BehaviorAssertion:
    """A chain of checks on one output; build it with assert_behavior or check_behavior.

    Its methods set `__tracebackhide__`: a failing check's pytest traceback ends at the
    test's own line, not in redline's frames.
    """

    def __init__(
        self,
        output: Output,
        *,
        collect: bool = False,
        config: Config | None = None,
        golden: str | Path | None = None,
    ) -> None:
        completion = answer_of(output)
        self.output = completion.text
        self.collect = collect
        self.golden = _read_golden(golden)
        self.results: list[BehaviorResult] = []
        self.raised = False
        self._config = config
        self._sample = Sample(completion)

    def called_tool(
        self,
        name: str,
        args: Mapping[str, Any] | str | Path | None = None,
        *,
        python: str | None = None,
        times: int | None = None,
        order: int | None = None,
    ) -> Self:
        """The function `name` was called, with arguments matching the JSON Schema `args` (a
        dict or a JSON file) and the expression `python` over `args`, `times` such calls,
        the first being call number `order` — as `type: tool-called` checks it."""
        params: dict[str, Any] = {"value": name}
        if isinstance(args, Mapping):
            params["args"] = dict(args)
        elif args is not None:
            params["args"] = f"file://{Path(args).resolve()}"
        for key, value in (("python", python), ("times", times), ("order", order)):
            if value is not None:
                params[key] = value
        return self._run("tool-called", name, params)

    def not_called_tool(self, name: str) -> Self:
        """The function `name` was never called."""
        return self._run("tool-not-called", name, {"value": name})

    def no_tool_call(self) -> Self:
        """No function was called at all."""
        return self._run("no-tool-call", "", {})

    def tool_args_valid(self, tools: Sequence[Mapping[str, Any]] | str | Path) -> Self:
        """Every call names one of `tools` (OpenAI function definitions, or a JSON file of
        them) with arguments valid against its parameter schema."""
        source = tools if not isinstance(tools, str | Path) else f"file://{Path(tools).resolve()}"
        return self._run("tool-args-valid", "", {}, tools=read_python("tools", source).tools)

    def mentions(
        self, concept: ConceptValue, *, threshold: float = DEFAULT_MENTION_THRESHOLD
    ) -> Self:
        """Some sentence is about `concept` (calibrated score ≥ threshold, 0-1); a concept in
        several languages is a list or `{"en": "refund", "zh": "退款"}`."""
        __tracebackhide__ = True
        return self._run("mentions", _label(concept), {"value": concept, "threshold": threshold})

    def not_mentions(
        self, concept: ConceptValue, *, threshold: float = DEFAULT_MENTION_THRESHOLD
    ) -> Self:
        """No sentence is about `concept` (in any of its renderings)."""
        __tracebackhide__ = True
        params = {"value": concept, "threshold": threshold}
        return self._run("not-mentions", _label(concept), params)

    def tone(self, tone: str, *, margin: float = DEFAULT_TONE_MARGIN) -> Self:
        """The tone is `tone`, leading the runner-up by `margin` (backend-scaled)."""
        __tracebackhide__ = True
        return self._run("tone", tone, {"value": tone, "margin": margin})

    def grounded_in(self, source: str, *, backend: str | None = None) -> Self:
        """Every claim is entailed by `source`, by the NLI model or (`backend="model"`) the
        configured checker model; unavailable (never a pass) when neither can answer."""
        __tracebackhide__ = True
        params: dict[str, Any] = {"value": source}
        if backend is not None:
            params["backend"] = backend
        return self._run("grounded-in", one_line(source), params)

    def numbers_from(self, source: str) -> Self:
        """Every number, amount, digit date and quote of the output appears in `source`."""
        __tracebackhide__ = True
        return self._run("numbers-from", one_line(source), {"value": source})

    def is_json(self, schema: Mapping[str, Any] | str | Path | None = None) -> Self:
        """The whole output is JSON, valid against `schema` (a dict or a JSON file) if given."""
        __tracebackhide__ = True
        if schema is None:
            return self._run("is-json", "", {})
        if isinstance(schema, Mapping):
            return self._record("is-json", "schema", _json_with_schema(dict(schema), self._sample))
        path = Path(schema).resolve()
        return self._run("is-json", path.name, {"schema": f"file://{path}"})

    def not_degenerate(
        self,
        *,
        min_compression: float = DEFAULT_MIN_COMPRESSION,
        min_distinct: float = DEFAULT_MIN_DISTINCT,
        n: int = 3,
    ) -> Self:
        """No token loops or padding: zlib compression ratio and distinct-n above their bars."""
        __tracebackhide__ = True
        self._run("compression-ratio", "", {"value": min_compression})
        return self._run("distinct-n", f"n={n}", {"value": min_distinct, "n": n})

    def max_words(self, n: int) -> Self:
        """At most `n` words (CJK/Thai characters count one each: `redline.text.words`)."""
        __tracebackhide__ = True
        return self._run("max-words", str(n), {"value": n})

    def verify(self) -> Self:
        """Raise once for everything collected (check_behavior); no-op when all passed."""
        __tracebackhide__ = True
        self.raised = True
        failed = [r for r in self.results if r.status is AssertionStatus.FAILED]
        unavailable = [r for r in self.results if r.status is AssertionStatus.UNAVAILABLE]
        if failed:
            raise AssertionError(self._summary(len(failed)))
        if unavailable:
            raise BehaviorUnavailable("; ".join(r.reason for r in unavailable))
        return self

    @property
    def failed(self) -> bool:
        return any(r.status is AssertionStatus.FAILED for r in self.results)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        __tracebackhide__ = True
        if exc is None:
            self.verify()

    def _summary(self, failures: int) -> str:
        lines = [f"{failures} of {len(self.results)} behaviour checks failed:"]
        lines.extend(f"  {r.line()}" for r in self.results)
        return "\n".join(lines)

    def _run(
        self,
        type_name: str,
        target: str,
        params: Mapping[str, Any],
        tools: Sequence[ToolDefinition] = (),
    ) -> Self:
        __tracebackhide__ = True
        assertion = _build(type_name, params, self._config, tools)
        try:
            check = assertion.check(self._sample)
        except Exception as exc:
            check = Check.unavailable(f"{type_name} could not be evaluated: {exc!r}")
        return self._record(type_name, target, check, assertion.threshold)

    def _record(
        self, type_name: str, target: str, check: Check, threshold: float | None = None
    ) -> Self:
        __tracebackhide__ = True
        result = BehaviorResult(
            assertion=type_name,
            target=target,
            status=check.status,
            reason=check.reason,
            score=check.score,
            threshold=check.threshold if check.threshold is not None else threshold,
        )
        self.results.append(result)
        observer = _OBSERVER.get()
        if observer is not None:
            observer(self, result)
        if not self.collect:
            if result.status is AssertionStatus.FAILED:
                self.raised = True
                raise AssertionError(
                    f"{type_name} {target!r} failed ({result.numbers()}): {result.reason}"
                )
            if result.status is AssertionStatus.UNAVAILABLE:
                self.raised = True
                raise BehaviorUnavailable(f"{type_name} {target!r}: {result.reason}")
        return self


def assert_behavior(
    output: Output, *, config: Config | None = None, golden: str | Path | None = None
) -> BehaviorAssertion:
    """A fail-fast chain: each method raises AssertionError at the first failing check."""
    return BehaviorAssertion(output, config=config, golden=golden)


def check_behavior(
    output: Output, *, config: Config | None = None, golden: str | Path | None = None
) -> BehaviorAssertion:
    """A collecting chain: every check runs; `.verify()` (or leaving a `with` block, or the
    end of the test under the pytest plugin) raises once with all results."""
    return BehaviorAssertion(output, collect=True, config=config, golden=golden)


_CONFIG_LOCK = threading.Lock()


@lru_cache(maxsize=4)
def _config_for(cwd: Path) -> Config:
    return load_config(cwd)


def _default_config() -> Config:
    with _CONFIG_LOCK:
        return _config_for(Path.cwd())


def _build(
    type_name: str,
    params: Mapping[str, Any],
    config: Config | None,
    tools: Sequence[ToolDefinition] = (),
) -> Assertion:
    """Parse a check exactly as a case file entry would be parsed."""
    cls = assertion_type(type_name)
    if cls is None:
        raise RuntimeError(f"assertion type {type_name!r} is not registered")
    text = yaml.safe_dump({"type": type_name, **params}, allow_unicode=True)
    node, problems = load_text(text, _WHERE)
    if node is None:
        raise ValueError("; ".join(str(p) for p in problems))
    spec = Spec(
        type_name=type_name,
        node=node,
        index=0,
        case_dir=Path.cwd(),
        config=config if config is not None else _default_config(),
        probe_backends=False,
        tools=tools,
    )
    assertion = cls.parse(spec)
    if assertion is None or spec.problems:
        raise ValueError("; ".join(p.message for p in spec.problems) or f"invalid {type_name}")
    return assertion


def _json_with_schema(schema: dict[str, Any], sample: Sample) -> Check:
    checked, why = JsonSchema.checked(schema)
    if checked is None:
        raise ValueError(f"invalid JSON Schema {why}")
    node, problems = load_text("type: is-json\n", _WHERE)
    if node is None:
        raise RuntimeError("; ".join(str(p) for p in problems))
    spec = Spec(type_name="is-json", node=node, index=0, case_dir=Path.cwd())
    return deterministic.IsJson(spec, checked, "the schema").check(sample)


def _label(concept: ConceptValue) -> str:
    if isinstance(concept, str):
        return concept
    texts = concept.values() if isinstance(concept, dict) else concept
    return " / ".join(texts)


def _read_golden(golden: str | Path | None) -> str | None:
    if golden is None:
        return None
    if isinstance(golden, Path):
        return golden.read_text(encoding="utf-8")
    return golden


__all__ = [
    "BehaviorAssertion",
    "BehaviorResult",
    "BehaviorUnavailable",
    "assert_behavior",
    "check_behavior",
    "observe_results",
]
