"""The case-file model: what a suite and a case may say, and what each setting enforces.

One declaration, read by the loader (which keys exist, their defaults), the guard
(which direction of a value lowers the bar, and how two values compare) and the
rerun. Each assertion type declares its parameters: the kind of value it takes,
its default, and how two values compare (`Compare`). A new assertion type is
declared here (or with `declare` from its own module) before a class implementing
it may register.

This package imports nothing heavy: the pre-commit hook reads it on every commit.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum
from functools import cached_property
from typing import Any

from redline.casemodel.expressions import OUTPUT_NAMES
from redline.vocabulary.tiers import Tier

SUITE_FILE = "suite.yaml"
RETIRED_DIR = "retired"
CASE_SUFFIXES = (".yaml", ".yml")
#: A value starting with this names a file relative to the file that holds the value.
FILE_REF = "file://"


TIERS = tuple(t.value for t in Tier)
DEFAULT_SAMPLES = 5
DEFAULT_TIER = Tier.CONTRACT
#: Requests a tool loop may make before redline stops it (`max_steps:`).
DEFAULT_MAX_STEPS = 8

#: Suite keys that change what the model is asked or how it samples (a prompt change when
#: edited: a new seed draws new outputs as surely as a new prompt does).
GENERATION_KEYS = ("model", "temperature", "max_tokens", "seed")
#: `samples:` as a mapping asks for sequential sampling (see redline.vocabulary.sequential).
SAMPLES_KEYS = frozenset({"min", "max", "margin", "bar"})
#: `seed: frozen` sends the same seed for the same case and sample index in every run.
FROZEN_SEED = "frozen"
#: Suite keys that say what every case's request sends besides the prompt text (a prompt
#: change when edited).
CONVERSATION_KEYS = ("messages", "tools", "tool_choice", "response_format")
SUITE_KEYS = frozenset(
    {"name", "prompt", "samples", "tier", "description", *GENERATION_KEYS, *CONVERSATION_KEYS}
)
PROMPT_KEYS = frozenset({"system", "user"})
CASE_KEYS = frozenset(
    {
        "id",
        "provenance",
        "vars",
        "tier",
        "samples",
        "required",
        "expect_refusal",
        "assert",
        "retired",
        "golden",
        "quarantine",
        "messages",
        "tool_results",
        "response_format",
    }
)
#: `quarantine: {reason, ticket, until}`: the case runs but cannot fail a run until then.
QUARANTINE_KEYS = frozenset({"reason", "ticket", "until"})
PROVENANCE_KEYS = frozenset({"ticket", "reported", "closed", "note", "source", "author"})
#: Assertion types of other tools a case file might use, and what to write instead.
FORMER_TYPES = {
    "javascript": "redline evaluates Python: use `type: python` with an expression over "
    "output, json and vars",
    "is-valid-json": "use `type: is-json`",
    "contains-json": "use `type: is-json`; the whole output must be JSON",
    "llm-rubric": "use `type: judge` with `rubric: file://rubrics/<name>.yaml`",
}
#: Keys every assertion accepts besides its own: `note` records why it is as it is.
COMMON_KEYS = frozenset({"type", "note"})


def prompt_file(key: str, value: str) -> str | None:
    """The file (relative to the suite folder) a `prompt:` entry names, None for inline text:
    `system` always names a file; `user` is a template unless it starts with file://."""
    if key == "system" or value.startswith(FILE_REF):
        return value.removeprefix(FILE_REF)
    return None


def suite_name(data: Any, folder: str) -> str:
    """A suite's name: its `name:`, else the name of its folder."""
    name = data.get("name") if isinstance(data, dict) else None
    return name if isinstance(name, str) and name.strip() else folder


#: The flag letters a `regex` assertion may write, and what each means.
REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}

#: Default bars of the semantic assertions (scaled by each backend's calibration).
DEFAULT_MENTION_THRESHOLD = 0.5
DEFAULT_TONE_MARGIN = 0.2
DEFAULT_DISTINCT_N = 3


class Compare(StrEnum):
    """How two values of one parameter compare: which change lets more outputs pass."""

    CEILING = "ceiling"  # a number the output must stay under: higher lets more through
    FLOOR = "floor"  # a number the output must reach: lower lets more through
    REQUIRED_TEXT = "required-text"  # text the output must contain
    FORBIDDEN_TEXT = "forbidden-text"  # text the output must not contain
    SOURCE = "source"  # text the output must stick to: more source text allows more claims
    PATTERN = "pattern"  # a regular expression: narrower only when provably so
    SCHEMA = "schema"  # a JSON Schema, compared keyword by keyword
    EXPECT = "expect"  # true/false where true asks more
    EXACT = "exact"  # the exact expected value: any edit needs a reviewer
    CODE = "code"  # code: any edit needs a reviewer
    IDENTITY = "identity"  # what is checked (a concept, a tone, n): an edit needs a reviewer


class Value(StrEnum):
    """The YAML shape a parameter takes."""

    NUMBER = "number"
    INTEGER = "integer"
    STRING = "string"  # inline text; `{{var}}` placeholders filled from the case's vars
    TEXT = "text"  # inline text (vars filled) or the verbatim content of a file:// reference
    RAW = "raw"  # inline text used as written (a regex, an expression)
    LIST = "list"  # a YAML list, compared as data
    MAPPING = "mapping"  # a YAML mapping, compared as data
    FLAGS = "flags"  # regex flag letters
    BOOLEAN = "boolean"
    JSON_FILE = "json-file"  # a file:// reference to a JSON document
    SCHEMA = "schema"  # a JSON Schema written inline, or a file:// reference to one
    PATH = "path"  # a file relative to the case file (file:// optional)
    ANY = "any"  # a string is TEXT; any other YAML value is compared as data
    #: A concept: a STRING, a list of its renderings, or a mapping language code → rendering.
    RENDERINGS = "renderings"


_REQUIRED: Any = object()


@dataclass(frozen=True)
class Param:
    """One parameter of an assertion type."""

    key: str
    value: Value
    compare: Compare
    default: Any = _REQUIRED
    minimum: float | None = None
    maximum: float | None = None
    #: Read as if written under this other key (is-json takes its schema as `value` or `schema`).
    alias_of: str = ""
    #: The value a hint shows (`e.g. value: 400`); the kind's usual example when "".
    example: str = ""
    #: Text that must say something: (message, hint) for an empty or blank value.
    empty: tuple[str, str] | None = None
    #: The only values allowed (a backend's name), when not empty.
    choices: tuple[str, ...] = ()
    #: A parameter that is no longer accepted: (message, hint) saying what to write instead.
    gone: tuple[str, str] | None = None
    #: For code: the names its expression reads (besides `re` and basic builtins).
    names: tuple[str, ...] = OUTPUT_NAMES
    #: The value names a tool, which the suite must declare under `tools:`.
    tool: bool = False

    @property
    def required(self) -> bool:
        return self.default is _REQUIRED and not self.optional

    @property
    def optional(self) -> bool:
        return self.default is None

    @property
    def has_default(self) -> bool:
        return self.default is not _REQUIRED and self.default is not None


@dataclass(frozen=True)
class AssertionModel:
    """An assertion type as case files write it."""

    name: str
    params: tuple[Param, ...]
    #: Types whose values compare with each other (contains / icontains).
    family: str = ""
    ignore_case: bool = False
    summary: str = ""
    #: It checks calls against the suite's `tools:`, which must declare some.
    needs_tools: bool = False
    _by_key: dict[str, Param] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._by_key.update({p.key: p for p in self.params})

    @property
    def keys(self) -> frozenset[str]:
        """Parameter keys besides COMMON_KEYS."""
        return frozenset(self._by_key)

    @cached_property
    def allowed(self) -> frozenset[str]:
        """Every key an entry of this type may write."""
        return self.keys | COMMON_KEYS

    @cached_property
    def pattern(self) -> Param | None:
        """The regular expression this type matches with, if it is one."""
        return next(
            (p for p in self.params if p.compare is Compare.PATTERN and p.value is Value.RAW),
            None,
        )

    def param(self, key: str) -> Param | None:
        return self._by_key.get(key)

    def default(self, key: str) -> Any:
        param = self._by_key[key]
        return param.default if param.has_default else None


def _budget(name: str, summary: str, example: str = "400") -> AssertionModel:
    return AssertionModel(
        name,
        (Param("value", Value.NUMBER, Compare.CEILING, minimum=0, example=example),),
        summary=summary,
    )


_TEXT_EMPTY = ("`value` is empty", "write the text to look for")
_SOURCE_EMPTY = ("the source is empty", "give the text the numbers must come from")
#: Who may answer a semantic check (redline.semantic.settings reads the same names).
CONCEPT_BACKENDS = ("embeddings", "model")
ENTAILMENT_BACKENDS = ("nli", "model")


def _text(
    name: str, compare: Compare, summary: str, *, ignore_case: bool = False
) -> AssertionModel:
    family = "contains" if compare is Compare.REQUIRED_TEXT else name
    return AssertionModel(
        name,
        (Param("value", Value.TEXT, compare, empty=_TEXT_EMPTY),),
        family=family,
        ignore_case=ignore_case,
        summary=summary,
    )


def _semantic(
    name: str,
    key: str,
    compare: Compare,
    default: float,
    maximum: float,
    summary: str,
    *,
    empty: tuple[str, str] | None = None,
    kind: Value = Value.STRING,
) -> AssertionModel:
    """A concept (`kind` RENDERINGS: in one or several languages) or a tone (`value`) and
    the bar a score must clear to count; `backend` (embeddings / model) names who answers,
    an edit of it needs a reviewer."""
    bar = Param(key, Value.NUMBER, compare, default=default, minimum=0, maximum=maximum)
    value = Param("value", kind, Compare.IDENTITY, empty=empty)
    backend = Param("backend", Value.RAW, Compare.IDENTITY, default=None, choices=CONCEPT_BACKENDS)
    return AssertionModel(name, (value, bar, backend), summary=summary)


_CONCEPT_EMPTY = ("the concept is empty", "write what the output should talk about")
_NLI_GONE = (
    "`nli:` is gone: grounded-in is the entailment check only, and it needs a "
    "backend that can answer",
    "for the number, date and quote check that needs no model, add "
    "`- type: numbers-from` with the same source; then remove `nli:`",
)

_MODELS: dict[str, AssertionModel] = {}


def declare(model: AssertionModel) -> AssertionModel:
    """Add an assertion type to the model (a module adding a type calls this once)."""
    existing = _MODELS.get(model.name)
    if existing is not None and existing != model:
        raise ValueError(f"assertion type {model.name!r} is already declared differently")
    _MODELS[model.name] = model
    return model


def assertion_model(name: str) -> AssertionModel | None:
    """The declaration of an assertion type, or None for a name no case may use."""
    return _MODELS.get(name)


def declared_types() -> list[str]:
    return sorted(_MODELS)


_SETTINGS: dict[str, Param] = {}


def declare_setting(param: Param) -> Param:
    """Add a case key that is a setting of the case (what it sends, how far it may go).

    The declaration is all a new key needs: the reader checks its values by `param.value`
    (with its bounds and default), the loader hands it to the runner as
    `Case.settings[key]`, the guard compares two values by `param.compare`, the app's
    edits set it by key path, and the loader/guard parity test writes every kind of value
    into it."""
    if param.key in CASE_KEYS or _SETTINGS.get(param.key, param) != param:
        raise ValueError(f"case key {param.key!r} is already declared differently")
    _SETTINGS[param.key] = param
    return param


def case_settings() -> tuple[Param, ...]:
    """The declared case settings, in the order they were declared."""
    return tuple(_SETTINGS.values())


def case_keys() -> frozenset[str]:
    """Every key a case file may write: the case's own and the declared settings."""
    return CASE_KEYS | frozenset(_SETTINGS)


for _model in (
    AssertionModel(
        "is-json",
        (
            Param("schema", Value.JSON_FILE, Compare.SCHEMA, default=None),
            Param("value", Value.JSON_FILE, Compare.SCHEMA, default=None, alias_of="schema"),
        ),
        summary="the whole output is JSON, valid against a schema when one is given",
    ),
    _text("contains", Compare.REQUIRED_TEXT, "the output contains the text (case-sensitive)"),
    _text(
        "icontains",
        Compare.REQUIRED_TEXT,
        "the output contains the text, ignoring case",
        ignore_case=True,
    ),
    _text("not-contains", Compare.FORBIDDEN_TEXT, "the output does not contain the text"),
    AssertionModel(
        "equals",
        (Param("value", Value.ANY, Compare.EXACT),),
        summary="the output is exactly the text (or, parsed as JSON, equals the value)",
    ),
    AssertionModel(
        "regex",
        (
            Param("value", Value.RAW, Compare.PATTERN),
            Param("flags", Value.FLAGS, Compare.PATTERN, default=""),
        ),
        summary="the output matches the regular expression somewhere",
    ),
    AssertionModel(
        "python",
        (Param("value", Value.RAW, Compare.CODE),),
        summary="a Python expression over output, json and vars is true",
    ),
    AssertionModel(
        "refusal",
        (Param("value", Value.BOOLEAN, Compare.EXPECT, default=True),),
        summary="the output is (value: true) or is not (false) a refusal",
    ),
    _budget("max-chars", "at most this many characters"),
    _budget(
        "max-words",
        "at most this many words (each CJK/Thai character is a word: redline.text.words; the "
        "counting rule is recorded in every run's manifest, not in case files)",
    ),
    _budget("max-tokens", "at most this many output tokens"),
    _budget("max-latency-ms", "answered within this many milliseconds", "2000"),
    _budget("max-cost", "cost at most this much", "0.002"),
    AssertionModel(
        "compression-ratio",
        (Param("value", Value.NUMBER, Compare.FLOOR, minimum=0, maximum=1),),
        summary="zlib compression ratio at least this (token loops compress well)",
    ),
    AssertionModel(
        "distinct-n",
        (
            Param("value", Value.NUMBER, Compare.FLOOR, minimum=0, maximum=1),
            Param("n", Value.INTEGER, Compare.IDENTITY, default=DEFAULT_DISTINCT_N, minimum=1),
        ),
        summary="share of distinct word n-grams at least this (words as max-words counts them)",
    ),
    _semantic(
        "mentions",
        "threshold",
        Compare.FLOOR,
        DEFAULT_MENTION_THRESHOLD,
        1,
        "a sentence of the output is about the concept (a negation still is)",
        empty=_CONCEPT_EMPTY,
        kind=Value.RENDERINGS,
    ),
    _semantic(
        "not-mentions",
        "threshold",
        Compare.CEILING,
        DEFAULT_MENTION_THRESHOLD,
        1,
        "no sentence of the output is about the concept, not even to deny it",
        empty=_CONCEPT_EMPTY,
        kind=Value.RENDERINGS,
    ),
    _semantic(
        "tone",
        "margin",
        Compare.FLOOR,
        DEFAULT_TONE_MARGIN,
        5,
        "the output's tone leads the runner-up by the margin",
    ),
    AssertionModel(
        "numbers-from",
        (Param("value", Value.TEXT, Compare.SOURCE, empty=_SOURCE_EMPTY),),
        summary="every number, amount, digit date and quote of the output is in the source",
    ),
    AssertionModel(
        "grounded-in",
        (
            Param(
                "value",
                Value.TEXT,
                Compare.SOURCE,
                empty=("the source is empty", "give the text the output must stick to"),
            ),
            Param(
                "backend", Value.RAW, Compare.IDENTITY, default=None, choices=ENTAILMENT_BACKENDS
            ),
            # Gone (the number check is numbers-from now); still read, so the loader can say
            # what to write instead of calling it an unknown key.
            Param("nli", Value.BOOLEAN, Compare.EXPECT, default=None, gone=_NLI_GONE),
        ),
        summary="every claim of the output is entailed by the source (NLI or checker model)",
    ),
    AssertionModel(
        "judge",
        (
            Param(
                "rubric",
                Value.PATH,
                Compare.IDENTITY,
                empty=("`rubric` is empty", "e.g. rubric: file://rubrics/<name>.yaml"),
            ),
        ),
        summary="a rubric scored by the pinned judge model",
    ),
    AssertionModel(
        "tool-called",
        (
            Param("value", Value.STRING, Compare.IDENTITY, tool=True),
            Param("args", Value.SCHEMA, Compare.SCHEMA, default=None),
            Param("python", Value.RAW, Compare.CODE, default=None, names=("args", "vars")),
            Param("times", Value.INTEGER, Compare.EXACT, default=None, minimum=1),
            Param("order", Value.INTEGER, Compare.EXACT, default=None, minimum=1),
        ),
        summary="the model called the function (in any step of a tool loop); `args`: a JSON "
        "Schema its arguments match, `python`: an expression over `args` that is true, "
        "`times`: exactly this many such calls, `order`: the first is call number N",
    ),
    AssertionModel(
        "tool-not-called",
        (Param("value", Value.STRING, Compare.IDENTITY),),
        summary="the model never called the function",
    ),
    AssertionModel(
        "no-tool-call",
        (Param("value", Value.BOOLEAN, Compare.EXPECT, default=True),),
        summary="the model called no function at all (value: false — it called at least one)",
    ),
    AssertionModel(
        "tool-args-valid",
        (Param("value", Value.STRING, Compare.IDENTITY, default=None, tool=True),),
        needs_tools=True,
        summary="every call (of the tool `value` names, else every call) names a tool the "
        "suite declares, with arguments valid against that tool's parameter schema",
    ),
):
    declare(_model)


#: A tool loop stops after this many requests: more lets a looping agent go on longer.
declare_setting(
    Param("max_steps", Value.INTEGER, Compare.CEILING, default=DEFAULT_MAX_STEPS, minimum=1)
)

__all__ = [
    "CASE_KEYS",
    "CASE_SUFFIXES",
    "COMMON_KEYS",
    "CONCEPT_BACKENDS",
    "CONVERSATION_KEYS",
    "DEFAULT_DISTINCT_N",
    "DEFAULT_MAX_STEPS",
    "DEFAULT_MENTION_THRESHOLD",
    "DEFAULT_SAMPLES",
    "DEFAULT_TIER",
    "DEFAULT_TONE_MARGIN",
    "ENTAILMENT_BACKENDS",
    "FILE_REF",
    "FORMER_TYPES",
    "FROZEN_SEED",
    "GENERATION_KEYS",
    "PROMPT_KEYS",
    "PROVENANCE_KEYS",
    "QUARANTINE_KEYS",
    "REGEX_FLAGS",
    "RETIRED_DIR",
    "SAMPLES_KEYS",
    "SUITE_FILE",
    "SUITE_KEYS",
    "TIERS",
    "AssertionModel",
    "Compare",
    "Param",
    "Value",
    "assertion_model",
    "case_keys",
    "case_settings",
    "declare",
    "declare_setting",
    "declared_types",
    "prompt_file",
    "suite_name",
]
