"""What an assertion is, how it is parsed from a case file, and the type registry.

An assertion type is a subclass of `Assertion` decorated with `@register("name")`.
Modules outside this package (semantic assertions, the judge) add types the same
way; `assertion_type` imports them at first use (see `TYPE_MODULES`) and
from then on accepts their names.

Evaluation order is cheap → expensive (`cost`). Layer 1 (deterministic and
heuristic) always runs completely; Layer 2 (`layer = LAYER_2`: models, judge)
runs only on samples whose Layer 1 results all passed (docs/rules.md: Layer 1 before Layer 2).
"""

from __future__ import annotations

import importlib
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

from redline.casemodel import assertion_model, declared_types
from redline.casemodel.effective import EffectiveAssertion, read_assertion
from redline.casemodel.values import is_number, is_whole
from redline.documents.reading import NodeReader
from redline.documents.yamlsource import Node, file_bytes
from redline.errors import Problem
from redline.text.words import words as split_words
from redline.vocabulary.completion import Completion
from redline.vocabulary.messages import ResponseFormat, ToolCall, ToolDefinition
from redline.vocabulary.verdicts import AssertionStatus

if TYPE_CHECKING:
    from redline.assertions.schemas import JsonSchema
    from redline.config import Config

LAYER_1 = 1
LAYER_2 = 2

#: Cost ranks: lower runs first. Layer 2 types should use COST_MODEL or above.
COST_METADATA = 10
COST_LENGTH = 20
COST_STRING = 30
COST_PARSE = 40
COST_REGEX = 50
COST_HEURISTIC = 60
COST_PYTHON = 70
COST_MODEL = 100
COST_JUDGE = 200

#: The module that registers each optional type. It is imported when a case first names
#: the type, so a suite without them never loads numpy, the embedding engine or pydantic.
TYPE_MODULES: Mapping[str, str] = {
    "mentions": "redline.assertions.semantic",
    "not-mentions": "redline.assertions.semantic",
    "tone": "redline.assertions.semantic",
    "grounded-in": "redline.assertions.semantic",
    "judge": "redline.assertions.judge",
}
OPTIONAL_MODULES = tuple(dict.fromkeys(TYPE_MODULES.values()))

T = TypeVar("T")
A = TypeVar("A", bound="Assertion")


class Sample:
    """What every assertion sees of one model output.

    Parsing and other derived values are computed once per sample and shared
    between assertions (`json`, `words`, and `cached` for anything else).
    """

    __slots__ = ("_cache", "case_id", "completion", "peers", "vars")

    def __init__(
        self,
        completion: Completion,
        vars: Mapping[str, str] | None = None,
        case_id: str = "",
        peers: Sequence[Assertion] = (),
    ) -> None:
        self.completion = completion
        self.vars: Mapping[str, str] = vars if vars is not None else {}
        self.case_id = case_id
        #: Every assertion of the case, so model-backed checks can ask about all at once.
        self.peers: Sequence[Assertion] = peers
        self._cache: dict[str, Any] = {}

    @property
    def text(self) -> str:
        """The raw output exactly as the provider returned it."""
        return self.completion.text

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """Every function call of the sample, in order: each step's, for a tool loop."""
        steps = self.completion.steps
        if not steps:
            return self.completion.tool_calls
        return self.cached("tool-calls", lambda s: tuple(c for st in steps for c in st.tool_calls))

    def arguments(self, position: int) -> tuple[Any, str | None]:
        """`ToolCall.parsed()` of call number `position` (from 1), parsed once per sample."""
        return self.cached(f"tool-args-{position}", lambda s: s.tool_calls[position - 1].parsed())

    @property
    def json(self) -> Any:
        """The whole output parsed as JSON, or None when it is not JSON."""
        return self._parsed()[0]

    @property
    def json_error(self) -> str | None:
        """Why the output is not JSON, or None when it parsed."""
        return self._parsed()[1]

    @property
    def json_prefix(self) -> bool:
        """Whether more output could still make this JSON: it starts like a JSON value and
        no text follows a complete one. Prose or a code fence before the JSON, or text
        after it, can never be undone by continuing."""
        return self.cached("json-prefix", _json_prefix)

    @property
    def words(self) -> list[str]:
        """The output's words by `redline.text.words` (each CJK/Thai character is a word)."""
        return self.cached("words", lambda s: split_words(s.text))

    def cached(self, key: str, compute: Callable[[Sample], T]) -> T:
        """`compute(self)` once per sample under `key` (use a module-specific prefix)."""
        if key not in self._cache:
            self._cache[key] = compute(self)
        value: T = self._cache[key]
        return value

    def _parsed(self) -> tuple[Any, str | None]:
        return self.cached("json", _parse_json)


_JSON_STARTS = frozenset('{["-0123456789tfn')


_LITERALS = ("true", "false", "null")
#: A JSON number cut off anywhere (`-`, `1.`, `2e` are all starts of valid numbers).
_NUMBER_START = re.compile(r"-?(?:0|[1-9]\d*)?(?:\.\d*)?(?:[eE][+-]?\d*)?")
_NUMBER_CHARS = frozenset("0123456789+-.eE")
_UNICODE_ESCAPE_START = re.compile(r"u[0-9a-fA-F]{0,3}")


def _json_prefix(sample: Sample) -> bool:
    if sample.json_error is None:
        return True
    text = sample.text.lstrip()
    if not text:
        return True
    if text[0] not in _JSON_STARTS:
        return False
    try:
        json.JSONDecoder().raw_decode(text)
    except RecursionError:
        return True
    except json.JSONDecodeError as exc:
        return _only_cut_short(text, exc)
    return False


def _only_cut_short(text: str, exc: json.JSONDecodeError) -> bool:
    """Whether decoding failed only because `text` ended (more of it could still be JSON),
    not at something no continuation can repair (`- bullet`, `the answer`, a raw newline
    inside a string)."""
    if exc.msg.startswith("Unterminated string"):
        return True
    tail = text[exc.pos :]
    if exc.msg.startswith("Invalid \\uXXXX escape"):
        return _UNICODE_ESCAPE_START.fullmatch(tail) is not None
    if not tail.strip():
        return True
    if any(literal.startswith(tail) for literal in _LITERALS):
        return True
    start = exc.pos
    while start > 0 and text[start - 1] in _NUMBER_CHARS:
        start -= 1
    return _NUMBER_START.fullmatch(text[start:]) is not None


def _parse_json(sample: Sample) -> tuple[Any, str | None]:
    try:
        return json.loads(sample.text), None
    except json.JSONDecodeError as exc:
        return None, f"{exc.msg} at line {exc.lineno} column {exc.colno}"
    except RecursionError:
        return None, "nested too deeply"


@dataclass(frozen=True)
class Check:
    """One assertion's answer for one sample; the pipeline adds index and type."""

    status: AssertionStatus
    reason: str
    score: float | None = None
    threshold: float | None = None
    #: A failure that no continuation of the output could undo (see `Assertion.final`).
    final: bool = False

    @classmethod
    def ok(cls, reason: str, score: float | None = None, threshold: float | None = None) -> Check:
        return cls(AssertionStatus.PASSED, reason, score, threshold)

    @classmethod
    def fail(cls, reason: str, score: float | None = None, threshold: float | None = None) -> Check:
        return cls(AssertionStatus.FAILED, reason, score, threshold)

    @classmethod
    def of(
        cls,
        passed: bool,
        reason: str,
        score: float | None = None,
        threshold: float | None = None,
    ) -> Check:
        return cls.ok(reason, score, threshold) if passed else cls.fail(reason, score, threshold)

    @classmethod
    def unavailable(cls, reason: str) -> Check:
        """The backend this assertion needs is missing: neither a pass nor a fail."""
        return cls(AssertionStatus.UNAVAILABLE, reason)


class Spec:
    """One `assert:` entry while its assertion is built: the entry as written (`node`) and
    its reading by the case-file reader (`reading`), which has checked every declared
    parameter already. A type's `parse` adds only what needs more than the declaration
    (a JSON Schema's meta-schema, a rubric's content, a backend that can answer).
    """

    def __init__(
        self,
        *,
        type_name: str,
        node: Node,
        written: Mapping[str, Any] | None = None,
        index: int,
        case_dir: Path,
        case_vars: Mapping[str, str] | None = None,
        config: Config | None = None,
        display: Callable[[Path], str] = str,
        probe_backends: bool = True,
        reading: EffectiveAssertion | None = None,
        tools: Sequence[ToolDefinition] = (),
        response_format: ResponseFormat | None = None,
    ) -> None:
        self.type_name = type_name
        self.node = node
        #: The entry as plain data (read from `node` when the caller has not already).
        self.written: Mapping[str, Any] = node.plain() if written is None else written
        self.index = index
        self.case_dir = case_dir
        self.case_vars: Mapping[str, str] = case_vars or {}
        self.config = config
        self.display = display
        #: Whether a model-backed type must find its backend now (case files: yes, so a run
        #: never starts with a check nobody can answer; `assert_behavior`: no, it reports
        #: the check as unavailable when it runs).
        self.probe_backends = probe_backends
        #: The tools the suite declares (what `tool-args-valid` checks calls against).
        self.tools: Sequence[ToolDefinition] = tools
        #: The structured-output schema the case's requests carry (`is-json` without a
        #: schema of its own checks against it).
        self.response_format = response_format
        self.problems: list[Problem] = []
        self._reader = NodeReader(self.problems, label=f"{type_name}: ")
        #: Files this assertion reads (schemas, sources): part of the case hash.
        self.files: list[Path] = []
        if reading is None:
            reading = self._read()
        self.reading = reading

    def _read(self) -> EffectiveAssertion | None:
        """The entry read alone, as a case file's would be (a check built in code); None,
        with its problems recorded, when it is unusable."""
        found, issues, files = read_assertion(
            self.written,
            self.index,
            self.case_dir.as_posix(),
            file_bytes,
            self.case_vars,
            lambda path: self.display(Path(path)),
        )
        for issue in issues:
            mark = self.node.mark_at(issue.at[2:], issue.on_key)
            self.problems.append(mark.problem(issue.message, issue.hint))
        self.files.extend(Path(path) for path in files)
        return None if issues else found

    def has(self, key: str) -> bool:
        """Whether the entry writes `key` (a default does not count)."""
        return key in self.written

    def problem(self, message: str, hint: str = "", key: str | None = None) -> None:
        """Record a problem at `key`'s value (or at the entry when key is None or absent)."""
        target = self.node.get(key) if key is not None else None
        mark = target.mark if target is not None else self.node.mark
        self._reader.add(mark, message, hint)

    def value(self, key: str = "value") -> Any:
        """Parameter `key` as read (its default when not written), None when it has none."""
        return None if self.reading is None else self.reading.value(key)

    def text(self, key: str = "value") -> str | None:
        """A text parameter: `{{var}}` placeholders filled and `file://` contents read where
        its declaration says so."""
        value = self.value(key)
        return value if isinstance(value, str) else None

    def number(self, key: str = "value") -> float | None:
        value = self.value(key)
        return float(value) if is_number(value) else None

    def integer(self, key: str = "value") -> int | None:
        value = self.value(key)
        return int(value) if is_whole(value) else None

    def boolean(self, key: str = "value") -> bool | None:
        value = self.value(key)
        return value if isinstance(value, bool) else None

    def source(self, key: str) -> Path | None:
        """The file parameter `key` was read from, when it names one."""
        setting = None if self.reading is None else self.reading.params.get(key)
        return Path(setting.source) if setting is not None and setting.source else None

    def validator(self, schema: Any, key: str) -> JsonSchema | None:
        """`schema` checked and compiled; None (with a problem) when it is no JSON Schema."""
        if not isinstance(schema, dict):
            self.problem("the schema must be a JSON object", "", key)
            return None
        # jsonschema loads only for a case that names a schema (it is slow to import).
        from redline.assertions.schemas import JsonSchema

        checked, why = JsonSchema.checked(schema)
        if checked is None:
            self.problem(f"invalid JSON Schema {why}", "fix the schema", key)
        return checked


class Assertion(ABC):
    """One check of a case, parsed once at load time and run on every sample.

    Subclasses set the class attributes, implement `parse` (read parameters
    from a Spec, return None when any was unusable) and `check`.
    """

    type_name: ClassVar[str] = ""
    layer: ClassVar[int] = LAYER_1
    cost: ClassVar[int] = COST_STRING
    #: A failure means the output has the wrong shape (verdict `malformed`, not `wrong`).
    structural: ClassVar[bool] = False
    #: A failure of this type on a cut-off output stays a failure however the output would
    #: have continued (a banned phrase already written, a budget already spent), so the
    #: sample is judged on content rather than as `truncated`. A type whose finality
    #: depends on the output sets `Check.final` itself instead.
    final: ClassVar[bool] = False

    def __init__(self, spec: Spec) -> None:
        self.index = spec.index
        self.params: Mapping[str, Any] = spec.written
        note = spec.written.get("note")
        self.note = "" if note is None else str(note)
        self.threshold: float | None = None

    @classmethod
    @abstractmethod
    def parse(cls: type[A], spec: Spec) -> A | None:
        """Read parameters from `spec`; None when any problem was recorded."""

    @abstractmethod
    def check(self, sample: Sample) -> Check:
        """Evaluate one sample. Must not raise for any output text."""

    def describe(self) -> str:
        """A short label for reports, e.g. `not-contains 'Here is'`."""
        value = self.params.get("value")
        if value is None:
            return self.type_name
        shown = repr(value) if isinstance(value, str) else str(value)
        if len(shown) > 60:
            shown = shown[:57] + "..."
        return f"{self.type_name} {shown}"


_REGISTRY: dict[str, type[Assertion]] = {}


def register(type_name: str) -> Callable[[type[A]], type[A]]:
    """Class decorator adding an assertion type under `type_name`."""

    def decorate(cls: type[A]) -> type[A]:
        if assertion_model(type_name) is None:
            raise ValueError(
                f"assertion type {type_name!r} is not declared in the case-file model: "
                "declare its parameters with redline.casemodel.declare first"
            )
        existing = _REGISTRY.get(type_name)
        if existing is not None and existing is not cls:
            raise ValueError(
                f"assertion type {type_name!r} is already registered by "
                f"{existing.__module__}.{existing.__qualname__}"
            )
        cls.type_name = type_name
        _REGISTRY[type_name] = cls
        return cls

    return decorate


def assertion_type(type_name: str) -> type[Assertion] | None:
    """The registered class for a type name (importing its module if need be), or None."""
    found = _REGISTRY.get(type_name)
    if found is None and type_name in TYPE_MODULES:
        import_optional(TYPE_MODULES[type_name])
        found = _REGISTRY.get(type_name)
    return found


def import_optional(module: str) -> None:
    """Import a module that registers assertion types, if it exists."""
    try:
        importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name != module:
            raise


def registered_types() -> list[str]:
    for module in OPTIONAL_MODULES:
        import_optional(module)
    return sorted(_REGISTRY)


def known_types() -> list[str]:
    """Every name a case may use: the types the case-file model declares."""
    return declared_types()
