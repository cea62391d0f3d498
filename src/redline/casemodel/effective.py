"""The one reader of case and suite files: what a file says, with every default applied.

A pure function of parsed YAML (plain data): the loader adds line:column to each `Issue`
by its key path and builds the runnable case, the guard compares two sides' readings,
the app re-reads an edit before staging it. A rule of the case-file format is written
here, once, from the declarations in `redline.casemodel`.

`effective_case` resolves a case against its suite (samples, tier, required as a
count of samples), applies each assertion parameter's default, fills `{{var}}`
placeholders and reads `file://` contents through a `Reader`, so the same
function serves a working tree and any git revision. Everything the loader would
refuse is returned as an `Issue` with the key path where it was written.
"""

from __future__ import annotations

import datetime
import json
import posixpath
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from redline.casemodel import (
    CASE_SUFFIXES,
    DEFAULT_SAMPLES,
    DEFAULT_TIER,
    FILE_REF,
    FORMER_TYPES,
    FROZEN_SEED,
    PROMPT_KEYS,
    PROVENANCE_KEYS,
    QUARANTINE_KEYS,
    REGEX_FLAGS,
    RETIRED_DIR,
    SAMPLES_KEYS,
    SUITE_FILE,
    SUITE_KEYS,
    TARGET_KEY,
    TIERS,
    AssertionModel,
    Compare,
    Param,
    Value,
    assertion_model,
    case_keys,
    case_settings,
    declared_types,
    prompt_file,
)
from redline.casemodel.conversation import ConversationReader
from redline.casemodel.expressions import expression_problem
from redline.casemodel.values import (
    did_you_mean,
    is_number,
    is_whole,
    kind_name,
    out_of_bounds,
    show,
    utf8_problem,
)
from redline.text.templates import fill, template_vars
from redline.vocabulary.messages import (
    Message,
    ResponseFormat,
    ToolChoice,
    ToolDefinition,
    ToolFixture,
)
from redline.vocabulary.sequential import (
    DEFAULT_MARGIN,
    DEFAULT_MAX,
    DEFAULT_MIN,
    MAX_MARGIN,
    pass_rate_bar,
    passes_needed,
)
from redline.vocabulary.tiers import Tier

#: repository (or folder) path, POSIX style → the file's bytes, or None when absent.
Reader = Callable[[str], bytes | None]
KeyPath = tuple[str | int, ...]

#: A key that is not written (`None` is a written YAML null).
_ABSENT: Any = object()
_FILE_HINT = "file:// paths are relative to the case file's folder"
_QUARANTINE_EXAMPLE = "{reason: flaky on the new model, ticket: SUP-3001, until: 2026-12-31}"
_PROVENANCE_EXAMPLE = "{ticket: SUP-2411, note: ...}"
#: What a missing parameter of each kind is, in `needs `key:` (...)`.
_NEEDS = {
    Value.NUMBER: "a number",
    Value.INTEGER: "a whole number",
    Value.BOOLEAN: "true or false",
    Value.ANY: "the exact expected output",
}
#: A language code a concept's rendering is keyed by: `en`, `zh`, `pt-BR`.
_LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})?$")
#: Text where a blank value still says something (only the empty string says nothing).
_BLANK_IS_TEXT = (Compare.REQUIRED_TEXT, Compare.FORBIDDEN_TEXT)


def default_required(tier: Tier, samples: int) -> int:
    """Contract: every sample must pass. Quality: one may miss."""
    if tier == Tier.CONTRACT:
        return samples
    return max(1, samples - 1)


@dataclass(frozen=True)
class Issue:
    """Something the loader refuses, where it was written, and what to do about it."""

    message: str
    at: KeyPath = ()
    hint: str = ""
    #: About the key itself (unknown, misplaced), so it points at the key, not its value.
    on_key: bool = False


@dataclass(frozen=True)
class Setting:
    """One effective value: what it is, whether the file wrote it, where it came from."""

    value: Any
    #: Not written where it applies: taken from the suite or the model's default.
    default: bool = False
    #: The file a `file://` value was read from (repository path), else "".
    source: str = ""
    at: KeyPath = ()

    def shown(self) -> str:
        if self.source and isinstance(self.value, dict):
            return self.source + (" (default)" if self.default else "")
        text = show(self.value)
        if self.source:
            text += f" (from {self.source})"
        return text + (" (default)" if self.default else "")


@dataclass(frozen=True)
class SuiteConversation:
    """A suite's `messages:`, `tools:`, `tool_choice:` and `response_format:`."""

    messages: tuple[Message, ...] = ()
    tools: tuple[ToolDefinition, ...] = ()
    tool_choice: ToolChoice | None = None
    response_format: ResponseFormat | None = None
    #: The files they name (transcripts, the tools file, schemas, images).
    files: tuple[str, ...] = ()
    #: Whether `tools` is what the suite declares (False: a tools file left unread).
    tools_known: bool = True


@dataclass(frozen=True)
class CaseConversation:
    """A case's `messages:`, `tool_results:` and `response_format:`."""

    messages: tuple[Message, ...] = ()
    tool_results: tuple[ToolFixture, ...] = ()
    response_format: ResponseFormat | None = None


@dataclass(frozen=True)
class SuiteBar:
    """A suite's settings for its cases, each with whether the suite wrote it."""

    samples: Setting
    tier: Setting
    issues: tuple[Issue, ...] = ()
    #: The `{{var}}` names the prompt uses: every case must give them.
    placeholders: tuple[str, ...] = ()
    #: Those of the system prompt alone: all a case giving its own `messages:` must give.
    system_placeholders: tuple[str, ...] = ()
    # The rest of suite.yaml as read (None where unusable or not written): not what its
    # cases are held to, so two bars that differ only here are equal.
    name: str | None = field(default=None, compare=False)
    model: str | None = field(default=None, compare=False)
    seed: int | None = field(default=None, compare=False)
    max_tokens: int | None = field(default=None, compare=False)
    temperature: float | None = field(default=None, compare=False)
    description: str = field(default="", compare=False)
    #: `prompt:` entries as written ({system, user}).
    prompt: Mapping[str, str] | None = field(default=None, compare=False)
    #: (system, user) templates, files read verbatim: only when read with a `Reader`.
    templates: tuple[str, str] | None = field(default=None, compare=False)
    prompt_files: tuple[str, ...] = field(default=(), compare=False)
    #: What every case's request sends besides the prompt text, as read (files included).
    conversation: SuiteConversation = field(default_factory=SuiteConversation, compare=False)
    #: What the readers declared for suite keys beyond the case-file model gave (`target`).
    extras: Mapping[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class EffectiveAssertion:
    index: int
    model: AssertionModel
    params: Mapping[str, Setting]
    note: str = ""

    @property
    def type(self) -> str:
        return self.model.name

    def value(self, key: str) -> Any:
        """The effective value of parameter `key`, None when it has none."""
        setting = self.params.get(key)
        return None if setting is None else setting.value


@dataclass(frozen=True)
class EffectiveCase:
    id: str
    path: str
    tier: Setting
    samples: Setting
    required: Setting
    expect_refusal: Setting
    #: Sequential sampling, resolved ({min, max, margin, bar}); None for a fixed count.
    sampling: Mapping[str, Any] | None
    assertions: tuple[EffectiveAssertion, ...]
    vars: Mapping[str, str]
    golden: Setting | None
    #: Every file the case reads (fixtures, schemas, rubrics, golden), repository paths.
    files: tuple[str, ...]
    issues: tuple[Issue, ...] = ()
    #: `quarantine:` as {reason, ticket, until (ISO date)}: the case cannot fail a run until then.
    quarantine: Setting | None = None
    provenance: Mapping[str, str] = field(default_factory=dict)
    #: The declared case settings (`redline.casemodel.declare_setting`) the case has.
    settings: Mapping[str, Setting] = field(default_factory=dict)
    #: The case's conversation, tool fixtures and response format, as read.
    conversation: CaseConversation = field(default_factory=CaseConversation, compare=False)

    @property
    def valid(self) -> bool:
        return not self.issues

    @property
    def rate(self) -> float:
        return int(self.required.value) / max(1, int(self.samples.value))


#: (where, message, hint): how a reader of a suite key reports a problem.
KeyReport = Callable[[KeyPath, str, str], None]
_SUITE_KEY_READERS: dict[str, Callable[[Any, str, KeyReport], Any]] = {}


def declare_suite_key(key: str, reader: Callable[[Any, str, KeyReport], Any]) -> None:
    """Have `reader(value, suite folder, report)` read suite key `key` wherever a suite is
    read (the loader and the guard alike); what it returns is in `SuiteBar.extras[key]`.
    A module whose concept owns the key (a suite's `target:`) declares it once."""
    _SUITE_KEY_READERS[key] = reader


def suite_bar(
    data: Any,
    folder: str = "",
    read: Reader | None = None,
    show_path: Callable[[str], str] | None = None,
) -> SuiteBar:
    """Everything suite.yaml (in `folder`) says, read as the loader reads it (the model's
    defaults where it says nothing); with `read`, the prompt files too. Model aliases are
    checked against the configuration by whoever has it."""
    checks = _Checks()
    if not isinstance(data, dict):
        checks.add((), f"{SUITE_FILE} must be a mapping, not {kind_name(data)}")
        data = {}
    checks.unknown_keys(data, (), SUITE_KEYS, SUITE_FILE)
    samples = _samples(checks, data, DEFAULT_SAMPLES)
    tier = checks.choice(data, "tier", TIERS, DEFAULT_TIER, _TIER_HINT)
    prompt = _prompt(checks, data)
    files: list[str] = []
    templates = None
    if prompt is not None and read is not None:
        templates = _templates(checks, prompt, folder, read, show_path or _same, files)
    conversation = _suite_conversation(checks, data, folder, read, show_path or _same)
    names = [posixpath.basename(prompt_file(k, v) or "") for k, v in (prompt or {}).items()]
    named = dict(zip((prompt or {}).keys(), names, strict=True))
    system_used = template_vars(templates[0], named.get("system", "")) if templates else []
    used = [*system_used, *template_vars(templates[1], named.get("user", ""))] if templates else []
    used = list(dict.fromkeys(used))
    extras = {
        key: read_key(data[key], folder, checks.add)
        for key, read_key in _SUITE_KEY_READERS.items()
        if key in data
    }
    return SuiteBar(
        Setting(samples, "samples" not in data, at=("samples",)),
        Setting(tier or DEFAULT_TIER, "tier" not in data, at=("tier",)),
        name=checks.text(data, "name", None),
        model=_model(checks, data),
        seed=_seed(checks, data),
        max_tokens=checks.whole(data, ("max_tokens",), None, minimum=1, example="400"),
        temperature=checks.number(data, "temperature", minimum=0, maximum=2, example="0.7"),
        description=checks.text(data, "description", "") or "",
        prompt=prompt,
        templates=templates,
        prompt_files=tuple(files),
        placeholders=tuple(used),
        system_placeholders=tuple(system_used),
        conversation=conversation,
        issues=tuple(checks.issues),
        extras=extras,
    )


def _suite_conversation(
    checks: _Checks,
    data: Mapping[str, Any],
    folder: str,
    read: Reader | None,
    show_path: Callable[[str], str],
) -> SuiteConversation:
    reader = ConversationReader(checks.add, folder, read, show_path)
    tools = reader.tools(data.get("tools"))
    known = read is not None or not isinstance(data.get("tools"), str)
    return SuiteConversation(
        messages=reader.messages(data.get("messages")),
        tools=tools,
        tool_choice=reader.tool_choice(data.get("tool_choice"), tools if known else None),
        response_format=reader.response_format(data.get("response_format")),
        files=tuple(dict.fromkeys(reader.files)),
        tools_known=known,
    )


def _templates(
    checks: _Checks,
    prompt: Mapping[str, str],
    folder: str,
    read: Reader,
    show_path: Callable[[str], str],
    files: list[str],
) -> tuple[str, str] | None:
    """The system and user templates, prompt files read verbatim."""
    texts: list[str] = []
    for key in ("system", "user"):
        if key not in prompt:
            texts.append("")
            continue
        relative = prompt_file(key, prompt[key])
        if relative is None:
            texts.append(prompt[key])
            continue
        # Kept as written (folder/../prompts/x.md): the path is part of the run's record.
        target = posixpath.join(folder, relative)
        raw = read(posixpath.normpath(target))
        at: KeyPath = ("prompt", key)
        if raw is None:
            message = f"prompt file {show_path(target)} does not exist"
            checks.add(at, message, "paths are relative to the suite folder")
            continue
        files.append(target)
        try:
            texts.append(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            line, _, problem = utf8_problem(exc)
            checks.add(at, f"prompt file {show_path(target)}, line {line}: {problem}")
    return (texts[0], texts[1]) if len(texts) == len(PROMPT_KEYS) else None


def effective_case(
    data: Any,
    path: str,
    suite: SuiteBar | None,
    read: Reader | None,
    show_path: Callable[[str], str] | None = None,
) -> EffectiveCase:
    """The bar case file `path` (holding `data`) enforces inside `suite`, files read by `read`
    and named in messages by `show_path`.

    Without a reader, `file://` values stand for themselves (compared by name, not content).
    """
    return _CaseReader(path, read, show_path or _same).case(data, suite or suite_bar({}))


def read_assertion(
    entry: Any,
    index: int,
    folder: str,
    read: Reader | None,
    variables: Mapping[str, str],
    show_path: Callable[[str], str] | None = None,
) -> tuple[EffectiveAssertion | None, tuple[Issue, ...], tuple[str, ...]]:
    """One `assert:` entry read alone (a check built in code rather than in a case file):
    its reading, its issues (at key paths under `("assert", index)`) and the files it read."""
    reader = _CaseReader(posixpath.join(folder, ""), read, show_path or _same)
    found = reader.assertion(index, entry, variables)
    return found, tuple(reader.checks.issues), tuple(dict.fromkeys(reader.files))


def case_id(data: Any, path: str) -> str:
    """The case's id: its `id:`, else its file name without the extension."""
    if isinstance(data, dict):
        value = data.get("id")
        if isinstance(value, str) and value.strip():
            return value
    base = posixpath.basename(path)
    for suffix in CASE_SUFFIXES:
        base = base.removesuffix(suffix)
    return base


def _same(path: str) -> str:
    return path


_TIER_HINT = "contract: every sample must pass; quality: one may miss"


class _Checks:
    """Typed reads of plain values at key paths: each unusable value becomes one Issue (the
    wording the user sees at file:line:column) and the read returns None."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def add(self, at: KeyPath, message: str, hint: str = "", *, on_key: bool = False) -> None:
        self.issues.append(Issue(message, at, hint, on_key))

    def wrong_type(
        self, at: KeyPath, value: Any, key: str, expected: str, example: str = "", label: str = ""
    ) -> None:
        hint = f"e.g. {key}: {example}" if example else ""
        self.add(at, f"{label}`{key}` must be {expected}, not {kind_name(value)}", hint)

    def unknown_keys(
        self,
        node: Mapping[Any, Any],
        at: KeyPath,
        allowed: frozenset[str],
        where: str,
        label: str = "",
    ) -> None:
        for key in node:
            if key not in allowed:
                self.add(
                    (*at, str(key)),
                    f"{label}unknown key {key!r}{did_you_mean(str(key), allowed)}",
                    f"allowed in {where}: {', '.join(sorted(allowed))}",
                    on_key=True,
                )

    def text(self, data: Mapping[str, Any], key: str, default: str | None) -> str | None:
        """A non-empty string."""
        value = data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if isinstance(value, str) and not value.strip():
            self.add((key,), f"`{key}` is empty", f"e.g. {key}: some-text")
            return None
        if not isinstance(value, str):
            self.wrong_type((key,), value, key, "a non-empty string", "some-text")
            return None
        return value

    def whole(
        self,
        data: Mapping[str, Any],
        at: KeyPath,
        default: int | None,
        *,
        minimum: int | None = None,
        example: str = "",
        expected: str = "a whole number",
    ) -> int | None:
        key = str(at[-1])
        value = data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if not is_whole(value):
            shown = example or str(default or minimum or 1)
            self.wrong_type(at, value, key, expected, shown)
            return None
        return int(value) if self.in_range(at, key, value, minimum, None) else None

    def number(
        self,
        data: Mapping[str, Any],
        key: str,
        default: float | None = None,
        *,
        minimum: float | None = None,
        maximum: float | None = None,
        exclusive_minimum: bool = False,
        example: str = "0.5",
        expected: str = "a number",
        at: KeyPath | None = None,
    ) -> float | None:
        where = at or (key,)
        value = data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if not is_number(value):
            self.wrong_type(where, value, key, expected, example)
            return None
        bounds = (minimum, maximum, exclusive_minimum, example)
        return float(value) if self.in_range(where, key, value, *bounds) else None

    def in_range(
        self,
        at: KeyPath,
        key: str,
        value: float,
        minimum: float | None,
        maximum: float | None,
        exclusive_minimum: bool = False,
        example: str = "",
        label: str = "",
    ) -> bool:
        """Whether `value` is within its bounds; else an issue naming the bound it crossed,
        with the nearest allowed value as the example."""
        problem = out_of_bounds(key, value, minimum, maximum, exclusive_minimum, example)
        if problem is None:
            return True
        self.add(at, label + problem[0], problem[1])
        return False

    def boolean(self, data: Mapping[str, Any], key: str, default: bool) -> bool | None:
        value = data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if not isinstance(value, bool):
            self.wrong_type((key,), value, key, "true or false", "true")
            return None
        return value

    def choice(
        self,
        data: Mapping[str, Any],
        key: str,
        options: tuple[str, ...],
        default: str,
        hint: str,
    ) -> str | None:
        """One of `options`, with the closest one suggested."""
        value = data.get(key, _ABSENT)
        if value is _ABSENT:
            return default
        if value not in options:
            shown = kind_name(value) if isinstance(value, dict | list) else value
            suggestion = did_you_mean(str(shown), options)
            message = f"`{key}` must be one of {', '.join(options)}, got {shown!r}{suggestion}"
            self.add((key,), message, hint)
            return None
        return str(value)


def _samples(checks: _Checks, data: Mapping[str, Any], default: Any) -> Any:
    """`samples: N`, or `samples: {min, max, margin, bar}` (sequential) with its defaults;
    `default` (the suite's) when the file says nothing or says something unusable."""
    value = data.get("samples", _ABSENT)
    if value is _ABSENT:
        return default
    if not isinstance(value, dict):
        example = str(default) if is_whole(default) else str(DEFAULT_SAMPLES)
        count = checks.whole(data, ("samples",), None, minimum=1, example=example)
        return default if count is None else count
    at: KeyPath = ("samples",)
    checks.unknown_keys(value, at, SAMPLES_KEYS, "samples")
    low = checks.whole(value, (*at, "min"), DEFAULT_MIN, minimum=1)
    high = checks.whole(value, (*at, "max"), max(DEFAULT_MAX, low or 1), minimum=1)
    margin = _rate(checks, value, "margin", DEFAULT_MARGIN, MAX_MARGIN)
    bar = _rate(checks, value, "bar", None, 1.0)
    if low is None or high is None or margin is None or (value.get("bar") is not None and not bar):
        return default
    if low > high:
        checks.add(
            at,
            f"`samples.min` ({low}) is more than `samples.max` ({high})",
            "a case starts with min samples and draws more, up to max, while undecided",
        )
        return default
    return {"min": low, "max": high, "margin": margin, "bar": bar}


def _rate(
    checks: _Checks, data: Mapping[str, Any], key: str, default: float | None, upper: float
) -> float | None:
    if data.get(key) is None:
        return default
    return checks.number(
        data,
        key,
        default,
        minimum=0,
        maximum=upper,
        exclusive_minimum=True,
        example=f"{min(0.8, upper / 2):g}",
        expected="a rate between 0 and 1",
        at=("samples", key),
    )


def _model(checks: _Checks, data: Mapping[str, Any]) -> str | None:
    value = data.get("model", _ABSENT)
    if value is _ABSENT and TARGET_KEY in data:
        return None  # the target chooses its model and reports it with each answer
    if value is _ABSENT:
        checks.add((), f"{SUITE_FILE} needs `model:`", "name a model alias from the config")
        return None
    if not isinstance(value, str) or not value.strip():
        checks.wrong_type(("model",), value, "model", "a model alias", "local")
        return None
    return value


def _seed(checks: _Checks, data: Mapping[str, Any]) -> int | None:
    value = data.get("seed", _ABSENT)
    if value is _ABSENT:
        return None
    if value == FROZEN_SEED:
        return 0
    if is_whole(value) and value >= 0:
        return int(value)
    checks.wrong_type(("seed",), value, "seed", f"`{FROZEN_SEED}` or a whole number", FROZEN_SEED)
    return None


def _prompt(checks: _Checks, data: Mapping[str, Any]) -> dict[str, str] | None:
    node = data.get("prompt", _ABSENT)
    if node is _ABSENT and TARGET_KEY in data:
        return None  # the target's own prompt files are its prompt
    if node is _ABSENT:
        hint = "prompt: {system: prompts/system.txt, user: '{{document}}'}"
        checks.add((), f"{SUITE_FILE} needs `prompt:`", hint)
        return None
    if not isinstance(node, dict):
        checks.wrong_type(("prompt",), node, "prompt", "a mapping", "{system: prompts/system.txt}")
        return None
    checks.unknown_keys(node, ("prompt",), PROMPT_KEYS, "prompt")
    found: dict[str, str] = {}
    for key, what in (("system", "the system prompt file"), ("user", "a template or file://")):
        value = node.get(key, _ABSENT)
        if value is _ABSENT and key == "user":
            continue  # the conversation (`messages:`) gives the turns
        if value is _ABSENT:
            what += " reference" if key == "user" else ""
            checks.add(("prompt",), f"`prompt` needs `{key}:` ({what})", on_key=True)
        elif not isinstance(value, str) or not value:
            expected, example = "a file path or text", "prompts/system.txt"
            checks.wrong_type(("prompt", key), value, f"prompt.{key}", expected, example)
        else:
            found[key] = value
    usable = "system" in found and (len(found) == len(PROMPT_KEYS) or "user" not in node)
    return found if usable else None


@dataclass
class _CaseReader:
    path: str
    reader: Reader | None
    show_path: Callable[[str], str]
    checks: _Checks = field(default_factory=_Checks)
    files: list[str] = field(default_factory=list)
    #: The tools the suite declares, when known (the tool checks name only these).
    tool_names: tuple[str, ...] | None = None

    def add(self, at: KeyPath, message: str, hint: str = "", *, on_key: bool = False) -> None:
        self.checks.add(at, message, hint, on_key=on_key)

    folder: str = ""

    def __post_init__(self) -> None:
        self.folder = posixpath.dirname(self.path)

    def case(self, data: Any, suite: SuiteBar) -> EffectiveCase:
        if not isinstance(data, dict):
            self.add((), f"a case must be a mapping, not {kind_name(data)}")
            data = {}
        checks = self.checks
        checks.unknown_keys(data, (), case_keys(), "a case")
        if "retired" in data:
            self.add(
                ("retired",),
                f"this case is marked retired but is not in {RETIRED_DIR}/",
                f"move it to {RETIRED_DIR}/ to retire it, or remove `retired:` to run it again",
                on_key=True,
            )
        written_id = checks.text(data, "id", None)
        provenance = self.provenance(data)
        variables = self.vars(data)
        tier, samples, required, sampling = self.bar(data, suite)
        refusal = checks.boolean(data, "expect_refusal", False)
        expect_refusal = Setting(
            bool(refusal), "expect_refusal" not in data, at=("expect_refusal",)
        )
        golden = self.golden(data)
        quarantine = self.quarantine(data)
        shared = suite.conversation
        self.tool_names = tuple(t.name for t in shared.tools) if shared.tools_known else None
        assertions = self.assertions(data, variables, bool(refusal))
        settings = self.settings(data, variables)
        conversation = self.conversation(data, suite)
        if isinstance(data.get("vars", {}), dict):
            own_turns = data.get("messages") is not None
            used = suite.system_placeholders if own_turns else suite.placeholders
            self.prompt_vars(used, variables)
        return EffectiveCase(
            id=written_id or case_id({}, self.path),
            path=self.path,
            tier=tier,
            samples=samples,
            required=required,
            expect_refusal=expect_refusal,
            sampling=sampling,
            assertions=tuple(assertions),
            vars=variables,
            golden=golden,
            quarantine=quarantine,
            files=tuple(dict.fromkeys(self.files)),
            issues=tuple(checks.issues),
            provenance=provenance,
            settings=settings,
            conversation=conversation,
        )

    def conversation(self, data: Mapping[str, Any], suite: SuiteBar) -> CaseConversation:
        """The case's own turns (after the suite's), tool fixtures and response format."""
        shared = suite.conversation
        reader = ConversationReader(self.add, self.folder, self.reader, self.show_path)
        messages = reader.messages(data.get("messages"), earlier=shared.messages)
        found = CaseConversation(
            messages=messages,
            tool_results=reader.tool_results(
                data.get("tool_results"), shared.tools if shared.tools_known else None
            ),
            response_format=reader.response_format(data.get("response_format")),
        )
        self.files.extend(reader.files)
        needs_turns = suite.prompt is not None and "user" not in suite.prompt
        if needs_turns and not messages and not shared.messages and "messages" not in data:
            self.add(
                (),
                "the suite's prompt has no `user:` template and this case has no `messages:`",
                "give the conversation (messages: [{role: user, content: ...}]), or a "
                "`user:` template under the suite's `prompt:`",
            )
        return found

    def settings(self, data: Mapping[str, Any], variables: Mapping[str, str]) -> dict[str, Setting]:
        """Every declared case setting, read as its declaration says (its default when the
        case writes none)."""
        found: dict[str, Setting] = {}
        for param in case_settings():
            at: KeyPath = (param.key,)
            value = data.get(param.key)
            if value is None:
                if param.required:
                    self.add((), f"a case needs `{param.key}:`", f"add `{param.key}: ...`")
                elif param.has_default:
                    found[param.key] = Setting(param.default, True, at=at)
                continue
            setting = _ParamReader(self, None, param, at).read(value, variables)
            if setting is not None:
                found[param.key] = setting
        return found

    def prompt_vars(self, used: Sequence[str], variables: Mapping[str, str]) -> None:
        """Every `{{var}}` the suite's prompt uses is given by the case."""
        missing = [name for name in used if name not in variables]
        if missing:
            self.add(
                ("vars",),
                f"the suite prompt uses {{{{{missing[0]}}}}} but this case has no var(s) "
                + ", ".join(missing),
                f"add under vars: {missing[0]}: ...",
                on_key=True,
            )

    def bar(
        self, data: Mapping[str, Any], suite: SuiteBar
    ) -> tuple[Setting, Setting, Setting, dict[str, Any] | None]:
        """Tier, samples, required passes and sequential plan: how much this case asks."""
        written_tier = self.checks.choice(data, "tier", TIERS, str(suite.tier.value), _TIER_HINT)
        tier_value = Tier(written_tier or suite.tier.value)
        tier = Setting(tier_value, "tier" not in data, at=("tier",))
        written = _samples(self.checks, data, suite.samples.value)
        default = "samples" not in data
        if not isinstance(written, dict):
            samples = Setting(written, default, at=("samples",))
            return tier, samples, self.required(data, tier_value, written), None
        bar = pass_rate_bar(tier_value, written["bar"])
        if "required" in data:
            self.add(
                ("required",),
                "`required` counts samples, but with `samples: {min, max}` the count varies",
                "give the bar as a rate instead: samples: {min: 3, max: 10, bar: 0.8}",
            )
        samples = Setting(written["max"], default, at=("samples",))
        required = Setting(passes_needed(bar, written["max"]), True, at=("samples",))
        return tier, samples, required, {**written, "bar": bar}

    def required(self, data: Mapping[str, Any], tier: Tier, samples: int) -> Setting:
        value = data.get("required", _ABSENT)
        fallback = Setting(default_required(tier, samples), True, at=("required",))
        if value is _ABSENT:
            return fallback
        if is_whole(value) and not 1 <= value <= samples:
            self.add(
                ("required",),
                f"`required` must be between 1 and samples ({samples}), got {value}",
                "required is how many of the samples must pass",
            )
            return fallback
        if not is_whole(value):
            expected = "a whole number of samples"
            self.checks.wrong_type(("required",), value, "required", expected, str(samples))
            return fallback
        return Setting(value, at=("required",))

    def provenance(self, data: Mapping[str, Any]) -> dict[str, str]:
        node = data.get("provenance", _ABSENT)
        if node is _ABSENT:
            self.add(
                (),
                "case has no `provenance:` (a case is an incident: where did it come from?)",
                "provenance: {ticket: SUP-2411, reported: 2026-02-03, note: why this case exists}",
            )
            return {}
        at: KeyPath = ("provenance",)
        if not isinstance(node, dict):
            self.checks.wrong_type(at, node, "provenance", "a mapping", _PROVENANCE_EXAMPLE)
            return {}
        self.checks.unknown_keys(node, at, PROVENANCE_KEYS, "provenance")
        values: dict[str, str] = {}
        for key, value in node.items():
            if value is None or isinstance(value, dict | list):
                expected = "text or a date"
                self.checks.wrong_type(
                    (*at, key), value, f"provenance.{key}", expected, "2026-02-03"
                )
                continue
            values[key] = value.isoformat() if isinstance(value, datetime.date) else str(value)
        return values

    def vars(self, data: Mapping[str, Any]) -> dict[str, str]:
        node = data.get("vars", _ABSENT)
        if node is _ABSENT:
            return {}
        if not isinstance(node, dict):
            example = "{document: file://fixtures/x.txt}"
            self.checks.wrong_type(("vars",), node, "vars", "a mapping", example)
            return {}
        values: dict[str, str] = {}
        for key, value in node.items():
            at: KeyPath = ("vars", str(key))
            # A var reported below still exists: its uses must not be reported as missing (or
            # empty) too, so until it is read it stands for itself.
            values[str(key)] = "{{" + str(key) + "}}"
            if value is None or isinstance(value, bool | dict | list):
                expected = "text or a file:// reference"
                self.checks.wrong_type(at, value, f"vars.{key}", expected, "text")
            elif isinstance(value, str) and value.startswith(FILE_REF):
                content = self.file_text(value, at, "fixture ")
                if content is not None:
                    values[str(key)] = content
            elif isinstance(value, datetime.date):
                values[str(key)] = value.isoformat()
            else:
                values[str(key)] = str(value)
        return values

    def golden(self, data: Mapping[str, Any]) -> Setting | None:
        """The reference answer, verbatim: inline text as written, or a file's exact text."""
        value = data.get("golden")
        at: KeyPath = ("golden",)
        if value is None:
            return None
        if not isinstance(value, str) or not value:
            expected = "text or a file:// reference"
            self.checks.wrong_type(at, value, "golden", expected, "file://x.txt")
            return None
        if not value.startswith(FILE_REF):
            return Setting(value, at=at)
        content = self.file_text(value, at, "golden answer ")
        return None if content is None else Setting(content, source=self.source(value), at=at)

    def quarantine(self, data: Mapping[str, Any]) -> Setting | None:
        node = data.get("quarantine", _ABSENT)
        at: KeyPath = ("quarantine",)
        if node is _ABSENT:
            return None
        if not isinstance(node, dict):
            self.checks.wrong_type(at, node, "quarantine", "a mapping", _QUARANTINE_EXAMPLE)
            return None
        self.checks.unknown_keys(node, at, QUARANTINE_KEYS, "quarantine")
        reason, until = node.get("reason"), node.get("until")
        if not isinstance(reason, str) or not reason.strip():
            self.add(
                (*at, "reason"),
                "a quarantine needs a `reason` (why this case may not fail a run for now)",
                _QUARANTINE_EXAMPLE,
            )
            return None
        if not isinstance(until, datetime.date):
            self.add(
                (*at, "until"),
                "a quarantine needs `until:` as a date (YYYY-MM-DD): it ends by itself",
                _QUARANTINE_EXAMPLE,
            )
            return None
        day = until.date() if isinstance(until, datetime.datetime) else until
        ticket = node.get("ticket")
        shown = "" if ticket is None else str(ticket)
        value = {"until": day.isoformat(), "reason": reason.strip(), "ticket": shown}
        return Setting(value, at=at)

    def assertions(
        self, data: Mapping[str, Any], variables: Mapping[str, str], expect_refusal: bool
    ) -> list[EffectiveAssertion]:
        node = data.get("assert")
        if node is None:
            if not expect_refusal:
                self.add(
                    (),
                    "case has no `assert:` list and does not expect a refusal",
                    "add assertions: the reporter's complaint, expressed literally",
                )
            return []
        if not isinstance(node, list):
            example = "[{type: contains, value: ...}]"
            self.checks.wrong_type(("assert",), node, "assert", "a list", example)
            return []
        found = []
        for index, entry in enumerate(node):
            parsed = self.assertion(index, entry, variables)
            if parsed is not None:
                found.append(parsed)
        return found

    def assertion(
        self, index: int, entry: Any, variables: Mapping[str, str]
    ) -> EffectiveAssertion | None:
        """One `assert:` entry, every parameter read as its type declares."""
        model = self.assertion_model(index, entry)
        if model is None:
            return None
        at: KeyPath = ("assert", index)
        label = f"{model.name}: "
        self.checks.unknown_keys(entry, at, model.allowed, model.name, label)
        params: dict[str, Setting] = {}
        for param in model.params:
            canonical = param.alias_of or param.key
            value = entry.get(param.key)
            if value is None:
                if canonical not in params and param.required:
                    what = _NEEDS.get(param.value, "a string")
                    hint = f"add `{param.key}: ...` to this assertion"
                    self.add(at, f"{model.name}: needs `{param.key}:` ({what})", hint)
                elif canonical not in params and param.has_default:
                    params[canonical] = Setting(param.default, True, at=(*at, param.key))
                continue
            if canonical in params and not params[canonical].default:
                self.add(
                    (*at, param.key),
                    f"{model.name}: give the {canonical} once, as `{param.key}:` or `{canonical}:`",
                    "remove one",
                )
                continue
            setting = _ParamReader(self, model, param, (*at, param.key)).read(value, variables)
            if setting is not None:
                params[canonical] = setting
        self.check_pattern(model, params, at)
        self.check_tools(model, params, at)
        note = entry.get("note")
        return EffectiveAssertion(index, model, params, "" if note is None else str(note))

    def check_tools(
        self, model: AssertionModel, params: Mapping[str, Setting], at: KeyPath
    ) -> None:
        """A tool check needs the suite's `tools:`, and names only tools declared there."""
        known = self.tool_names
        if known is None:
            return
        if model.needs_tools and not known:
            self.add(
                at,
                f"{model.name}: the suite declares no tools to check the calls against",
                "declare them under `tools:` in suite.yaml, or remove this assertion",
            )
            return
        for param in model.params:
            setting = params.get(param.key)
            if not param.tool or setting is None or setting.default or setting.value in known:
                continue
            self.add(
                (*at, param.key),
                f"{model.name}: tool {setting.value!r} is not one the suite declares "
                f"(declared: {', '.join(known) or 'none'})",
                "name a tool from the suite's `tools:`",
            )

    def assertion_model(self, index: int, entry: Any) -> AssertionModel | None:
        at: KeyPath = ("assert", index)
        if not isinstance(entry, dict):
            message = f"an assertion must be a mapping, not {kind_name(entry)}"
            self.add(at, message, "write - type: contains\n  value: ...")
            return None
        if "type" not in entry:
            self.add(at, "assertion has no `type:`", f"one of {', '.join(declared_types())}")
            return None
        name = entry["type"]
        if not isinstance(name, str):
            self.checks.wrong_type(
                (*at, "type"), name, "type", "an assertion type name", "contains"
            )
            return None
        model = assertion_model(name)
        if model is None:
            known = declared_types()
            hint = FORMER_TYPES.get(name, f"known types: {', '.join(known)}")
            self.add(
                (*at, "type"), f"unknown assertion type {name!r}{did_you_mean(name, known)}", hint
            )
        return model

    def check_pattern(
        self, model: AssertionModel, params: Mapping[str, Setting], at: KeyPath
    ) -> None:
        """A regular expression compiles with the flags written beside it."""
        pattern = model.pattern
        if pattern is None or pattern.key not in params:
            return
        flags = 0
        for letter in str(params["flags"].value if "flags" in params else ""):
            flags |= REGEX_FLAGS.get(letter, 0)
        try:
            re.compile(str(params[pattern.key].value), flags)
        except re.error as exc:
            where = f" at position {exc.pos}" if exc.pos is not None else ""
            self.add(
                (*at, pattern.key),
                f"{model.name}: bad regular expression: {exc.msg}{where}",
                "Python `re` syntax; in YAML prefer single quotes so backslashes stay as written",
            )

    def resolve(self, relative: str) -> str:
        joined = posixpath.normpath(posixpath.join(self.folder, relative))
        return "" if joined == "." else joined

    def source(self, ref: str) -> str:
        return self.resolve(ref[len(FILE_REF) :]) if self.reader is not None else ""

    def file_bytes(
        self, target: str, at: KeyPath, what: str, hint: str = _FILE_HINT
    ) -> bytes | None:
        """The bytes of `target` (a resolved path), or None with an issue when it is absent."""
        raw = self.reader(target) if self.reader is not None else b""
        if raw is None:
            self.add(at, f"{what}{self.show_path(target)} does not exist", hint)
            return None
        self.files.append(target)
        return raw

    def file_text(self, ref: str, at: KeyPath, what: str = "file ", label: str = "") -> str | None:
        """The text a `file://` reference names, verbatim; the reference itself without a
        reader (a file compared by name)."""
        if self.reader is None:
            return ref
        target = self.resolve(ref[len(FILE_REF) :])
        raw = self.file_bytes(target, at, label + what)
        if raw is None:
            return None
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line, _, message = utf8_problem(exc)
            self.add(
                at,
                f"{label}{what}{self.show_path(target)}, line {line}: {message}",
                "save it as UTF-8; its bytes are otherwise kept exactly as they are",
            )
            return None


@dataclass
class _ParamReader:
    """One written parameter of one assertion, read as its declaration says."""

    case: _CaseReader
    #: The assertion type the parameter belongs to; None for a case setting.
    model: AssertionModel | None
    param: Param
    at: KeyPath

    @property
    def label(self) -> str:
        return f"{self.model.name}: " if self.model is not None else ""

    def add(self, message: str, hint: str = "") -> None:
        self.case.add(self.at, self.label + message, hint)

    def read(self, value: Any, variables: Mapping[str, str]) -> Setting | None:
        param, kind = self.param, self.param.value
        if param.gone is not None:
            self.add(*param.gone)
            return None
        if kind is Value.ANY and not isinstance(value, str):
            return Setting(value, at=self.at)
        if kind in (Value.LIST, Value.MAPPING):
            return self.data(value)
        if kind is Value.SCHEMA and isinstance(value, dict):
            return Setting(value, at=self.at)
        if kind is Value.RENDERINGS and isinstance(value, dict | list):
            return self.renderings(value, variables)
        if kind in (Value.NUMBER, Value.INTEGER, Value.BOOLEAN):
            return self.scalar(value)
        if isinstance(value, bool | dict | list):
            self.case.checks.wrong_type(
                self.at, value, param.key, "a string", '"some text"', self.label
            )
            return None
        text = value if isinstance(value, str) else str(value)
        if not self.says_something(text):
            return None
        setting = self.text(text, variables)
        if setting is None or not self.says_something(setting.value):
            return None
        return setting if self.well_formed(setting.value) else None

    def data(self, value: Any) -> Setting | None:
        """A list or a mapping, taken as written."""
        wanted = list if self.param.value is Value.LIST else dict
        if not isinstance(value, wanted):
            expected = "a list" if wanted is list else "a mapping"
            example = "[...]" if wanted is list else "{...}"
            key = self.param.key
            self.case.checks.wrong_type(self.at, value, key, expected, example, self.label)
            return None
        return Setting(value, at=self.at)

    def renderings(
        self, value: dict[Any, Any] | list[Any], variables: Mapping[str, str]
    ) -> Setting | None:
        """A concept in several languages: `[text, ...]` or `{language code: text, ...}`,
        each rendering non-empty text with its `{{var}}` placeholders filled."""
        entries = list(value.items()) if isinstance(value, dict) else list(enumerate(value))
        if not entries:
            self.add("the concept has no rendering", "write what the output should talk about")
            return None
        filled: dict[Any, str] = {}
        for key, text in entries:
            at = (*self.at, key)
            if isinstance(value, dict) and not _LANGUAGE_CODE.match(str(key)):
                self.case.add(
                    at,
                    f"{self.label}{key!r} is not a language code",
                    "key each rendering by its language code: en, zh, id, vi, ...",
                    on_key=True,
                )
                return None
            if not isinstance(text, str) or not text.strip():
                self.case.add(
                    at,
                    f"{self.label}rendering {key!r} of the concept must be non-empty text",
                    "e.g. value: {en: refund, zh: 退款}",
                )
                return None
            setting = self.text(text, variables)
            if setting is None:
                return None
            filled[key] = setting.value
        return Setting(filled if isinstance(value, dict) else list(filled.values()), at=self.at)

    def scalar(self, value: Any) -> Setting | None:
        """A number, a whole number or a boolean, within the parameter's range."""
        param, key, checks = self.param, self.param.key, self.case.checks
        if param.value is Value.BOOLEAN:
            if not isinstance(value, bool):
                checks.wrong_type(self.at, value, key, "true or false", "true", self.label)
                return None
            return Setting(value, at=self.at)
        whole = param.value is Value.INTEGER
        if not (is_whole(value) if whole else is_number(value)):
            expected = "a whole number" if whole else "a number"
            example = param.example or ("200" if whole else "0.5")
            checks.wrong_type(self.at, value, key, expected, example, self.label)
            return None
        if not checks.in_range(self.at, key, value, param.minimum, param.maximum, label=self.label):
            return None
        return Setting(value, at=self.at)

    def text(self, text: str, variables: Mapping[str, str]) -> Setting | None:
        kind, case = self.param.value, self.case
        if kind in (Value.JSON_FILE, Value.SCHEMA):
            return self.json_file(text)
        if kind is Value.PATH:
            relative = text.removeprefix(FILE_REF)
            target = case.resolve(relative)
            what = f"{self.param.key} file "
            hint = f"{self.param.key} paths are relative to the case file's folder"
            if case.file_bytes(target, self.at, self.label + what, hint) is None:
                return None
            return Setting(relative, source=target if case.reader else "", at=self.at)
        if kind in (Value.TEXT, Value.ANY) and text.startswith(FILE_REF):
            content = case.file_text(text, self.at, label=self.label)
            if content is None:
                return None
            return Setting(content, source=case.source(text), at=self.at)
        if kind in (Value.RAW, Value.FLAGS):
            return Setting(text, at=self.at)
        filled, missing = fill(text, variables)
        for name in missing:
            self.add(
                f"`{self.param.key}` uses {{{{{name}}}}} but the case has no var {name!r}",
                "add it under vars: or remove the placeholder",
            )
        return Setting(filled, at=self.at)

    def json_file(self, ref: str) -> Setting | None:
        key, case = self.param.key, self.case
        if not ref.startswith(FILE_REF):
            self.add(
                f"`{key}` must be a file reference, got {ref!r}",
                f"write it as {key}: {FILE_REF}schemas/name.json (relative to the case file)",
            )
            return None
        if case.reader is None:
            return Setting(ref, at=self.at)
        target = case.resolve(ref[len(FILE_REF) :])
        raw = case.file_bytes(target, self.at, self.label + "file ")
        if raw is None:
            return None
        try:
            schema = json.loads(raw.decode("utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as exc:
            self.add(f"{case.show_path(target)} is not valid JSON: {exc}", "fix the JSON file")
            return None
        if not isinstance(schema, dict):
            self.add("the schema file must hold a JSON object")
            return None
        return Setting(schema, source=target, at=self.at)

    def says_something(self, value: Any) -> bool:
        """Text that must say something is not empty (nor blank, for text that is a source,
        a concept or a tone)."""
        empty = self.param.empty
        if empty is None or not isinstance(value, str):
            return True
        blank = value == "" if self.param.compare in _BLANK_IS_TEXT else not value.strip()
        if blank:
            self.add(*empty)
        return not blank

    def well_formed(self, text: str) -> bool:
        """Flags, choices, regular expressions and code that mean something."""
        param = self.param
        if param.choices and text not in param.choices:
            self.add(
                f"{param.key} {text!r} is not one of {', '.join(param.choices)}",
                "leave it out to use the default",
            )
            return False
        if param.value is Value.FLAGS:
            unknown = [letter for letter in text if letter not in REGEX_FLAGS]
            if unknown:
                self.add(f"unknown regex flag {unknown[0]!r}", "use any of i, m, s, x")
            return not unknown
        if param.compare is Compare.CODE:
            problem = expression_problem(text, param.names)
            if problem is not None:
                self.add(*problem)
            return problem is None
        return True


def file_refs(data: Any, folder: str) -> list[str]:
    """Repository paths a case names with file:// anywhere (cheap: no file is read)."""
    found: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "rubric" and isinstance(value, str):
                    found.append(_join(folder, value.removeprefix(FILE_REF)))
                else:
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)
        elif isinstance(node, str) and node.startswith(FILE_REF):
            found.append(_join(folder, node[len(FILE_REF) :]))

    walk(data)
    return found


def _join(folder: str, relative: str) -> str:
    joined = posixpath.normpath(posixpath.join(folder, relative.strip()))
    return "" if joined == "." else joined


__all__ = [
    "CaseConversation",
    "EffectiveAssertion",
    "EffectiveCase",
    "Issue",
    "KeyPath",
    "Reader",
    "Setting",
    "SuiteBar",
    "SuiteConversation",
    "case_id",
    "default_required",
    "effective_case",
    "file_refs",
    "read_assertion",
    "suite_bar",
]
