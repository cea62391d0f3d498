"""What a case actually enforces: its bar with every default applied, read from plain data.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redline.casemodel import (
    CASE_KEYS,
    COMMON_KEYS,
    DEFAULT_SAMPLES,
    DEFAULT_TIER,
    FILE_REF,
    PROMPT_KEYS,
    PROVENANCE_KEYS,
    QUARANTINE_KEYS,
    SAMPLES_KEYS,
    SUITE_KEYS,
    TARGET_KEY,
    TIERS,
    AssertionModel,
    Compare,
    Param,
    Value,
    assertion_model,
    declared_types,
)
from redline.casemodel.values import is_number, is_whole, show
from redline.text.templates import fill
from redline.vocabulary.sequential import (
    DEFAULT_MARGIN,
    DEFAULT_MAX,
    DEFAULT_MIN,
    MAX_MARGIN,
    pass_rate_bar,
    passes_needed,
)

#: repository (or folder) path, POSIX style → the file's bytes, or None when absent.
Reader = Callable[[str], bytes | None]
KeyPath = tuple[str | int, ...]

#: Text parameters an empty value would make meaningless.
_NON_EMPTY = (Compare.REQUIRED_TEXT, Compare.FORBIDDEN_TEXT, Compare.SOURCE)
_REGEX_FLAGS = {"i": re.IGNORECASE, "m": re.MULTILINE, "s": re.DOTALL, "x": re.VERBOSE}


def default_required(tier: str, samples: int) -> int:
    """Contract: every sample must pass. Quality: one may miss."""
    if tier == "contract":
        return samples
    return max(1, samples - 1)


@dataclass(frozen=True)
class Issue:
    """Something the loader refuses, and where it was written."""

    message: str
    at: KeyPath = ()


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
class SuiteBar:
    """A suite's settings for its cases, each with whether the suite wrote it."""

    samples: Setting
    tier: Setting
    issues: tuple[Issue, ...] = ()


@dataclass(frozen=True)
class EffectiveAssertion:
    index: int
    model: AssertionModel
    params: Mapping[str, Setting]

    @property
    def type(self) -> str:
        return self.model.name


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

    @property
    def valid(self) -> bool:
        return not self.issues

    @property
    def rate(self) -> float:
        return int(self.required.value) / max(1, int(self.samples.value))


def suite_bar(data: Any) -> SuiteBar:
    """Samples and tier a suite gives its cases (the model's defaults where it says none)."""
    issues: list[Issue] = []
    if not isinstance(data, dict):
        issues.append(Issue("suite.yaml must be a mapping"))
        data = {}
    for key in data:
        if key not in SUITE_KEYS:
            issues.append(Issue(f"unknown key {key!r} in suite.yaml", (str(key),)))
    samples = _samples(data, DEFAULT_SAMPLES, issues)
    tier = _tier(data, DEFAULT_TIER, issues)
    prompt = data.get("prompt")
    targeted = data.get(TARGET_KEY) is not None  # the target brings its prompt and model
    if prompt is None and targeted:
        pass
    elif prompt is None:
        issues.append(Issue("suite.yaml needs `prompt:`"))
    elif not isinstance(prompt, dict):
        issues.append(Issue("`prompt` must be a mapping", ("prompt",)))
    else:
        issues += [
            Issue(f"unknown key {k!r} in prompt", ("prompt", str(k)))
            for k in prompt
            if k not in PROMPT_KEYS
        ]
        issues += [
            Issue(f"`prompt` needs `{k}:`", ("prompt",))
            for k in sorted(PROMPT_KEYS)
            if k not in prompt
        ]
    model = data.get("model")
    if not (model is None and targeted) and (not isinstance(model, str) or not model.strip()):
        issues.append(Issue("suite.yaml needs `model:` (a model alias)", ("model",)))
    return SuiteBar(
        Setting(samples, "samples" not in data, at=("samples",)),
        Setting(tier, "tier" not in data, at=("tier",)),
        tuple(issues),
    )


def effective_case(
    data: Any, path: str, suite: SuiteBar | None, read: Reader | None
) -> EffectiveCase:
    """The bar case file `path` (holding `data`) enforces inside `suite`, files read by `read`.

    Without a reader, `file://` values stand for themselves (compared by name, not content).
    """
    return _CaseReader(path, read).case(data, suite or suite_bar({}))


def case_id(data: Any, path: str) -> str:
    """The case's id: its `id:`, else its file name without the extension."""
    if isinstance(data, dict):
        value = data.get("id")
        if (isinstance(value, str) or is_whole(value)) and str(value).strip():
            return str(value)
    base = posixpath.basename(path)
    for suffix in (".yaml", ".yml"):
        base = base.removesuffix(suffix)
    return base


def _samples(data: Mapping[str, Any], default: Any, issues: list[Issue]) -> Any:
    """`samples: N`, or `samples: {min, max, margin, bar}` (sequential) with its defaults."""
    value = data.get("samples", default)
    if not isinstance(value, dict):
        return _count({"samples": value}, "samples", DEFAULT_SAMPLES, issues)
    for key in value:
        if key not in SAMPLES_KEYS:
            issues.append(Issue(f"unknown key {key!r} in samples", ("samples", str(key))))
    low = _count(value, "min", DEFAULT_MIN, issues)
    high = _count(value, "max", max(DEFAULT_MAX, low), issues)
    margin = _rate(value, "margin", DEFAULT_MARGIN, MAX_MARGIN, issues)
    bar = _rate(value, "bar", None, 1.0, issues)
    if low > high:
        issues.append(Issue("`samples.min` is more than `samples.max`", ("samples",)))
    return {"min": low, "max": high, "margin": margin, "bar": bar}


def _rate(
    data: Mapping[str, Any], key: str, default: float | None, upper: float, issues: list[Issue]
) -> float | None:
    value = data.get(key, default)
    if value is None:
        return None
    if not is_number(value) or not 0 < value <= upper:
        issues.append(
            Issue(f"`samples.{key}` must be above 0 and at most {upper:g}", ("samples", key))
        )
        return default
    return float(value)


def _count(data: Mapping[str, Any], key: str, default: int, issues: list[Issue]) -> int:
    value = data.get(key, default)
    if not is_whole(value) or value < 1:
        issues.append(Issue(f"`{key}` must be a whole number of at least 1", (key,)))
        return default
    return int(value)


def _tier(data: Mapping[str, Any], default: str, issues: list[Issue]) -> str:
    value = data.get("tier", default)
    if value not in TIERS:
        issues.append(Issue(f"`tier` must be one of {', '.join(TIERS)}", ("tier",)))
        return default
    return str(value)


@dataclass
class _CaseReader:
    path: str
    reader: Reader | None
    issues: list[Issue] = field(default_factory=list)
    files: list[str] = field(default_factory=list)

    def read(self, path: str) -> bytes | None:
        return self.reader(path) if self.reader is not None else b""

    @property
    def folder(self) -> str:
        return posixpath.dirname(self.path)

    def case(self, data: Any, suite: SuiteBar) -> EffectiveCase:
        if not isinstance(data, dict):
            self.issues.append(Issue("a case must be a mapping"))
            data = {}
        for key in data:
            if key not in CASE_KEYS:
                self.issues.append(Issue(f"unknown key {key!r}", (str(key),)))
        if "retired" in data:
            self.issues.append(Issue("marked `retired:` but not in retired/", ("retired",)))
        self.provenance(data.get("provenance"))
        variables = self.vars(data.get("vars"))
        tier_value = _tier(data, str(suite.tier.value), self.issues)
        tier = Setting(tier_value, "tier" not in data, at=("tier",))
        written = _samples(data, suite.samples.value, self.issues)
        sampling: dict[str, Any] | None = None
        if isinstance(written, dict):
            bar = pass_rate_bar(tier_value, written["bar"])
            sampling = {**written, "bar": bar}
            samples = Setting(written["max"], "samples" not in data, at=("samples",))
            required = Setting(passes_needed(bar, written["max"]), True, at=("samples",))
            if "required" in data:
                self.issues.append(
                    Issue(
                        "`required` counts samples; with `samples: {min, max}` give `bar`",
                        ("required",),
                    )
                )
        else:
            samples = Setting(written, "samples" not in data, at=("samples",))
            required = self.required(data, tier_value, written)
        refusal = data.get("expect_refusal", False)
        if not isinstance(refusal, bool):
            self.issues.append(Issue("`expect_refusal` must be true or false", ("expect_refusal",)))
            refusal = False
        expect_refusal = Setting(refusal, "expect_refusal" not in data, at=("expect_refusal",))
        assertions = self.assertions(data.get("assert"), variables, refusal)
        quarantine = self.quarantine(data.get("quarantine"))
        golden = None
        if data.get("golden") is not None:
            golden = self.text(data["golden"], ("golden",), Value.RAW, {})
        return EffectiveCase(
            id=case_id(data, self.path),
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
            issues=tuple(self.issues),
        )

    def quarantine(self, node: Any) -> Setting | None:
        at: KeyPath = ("quarantine",)
        if node is None:
            return None
        if not isinstance(node, dict):
            self.issues.append(Issue("`quarantine` must be a mapping", at))
            return None
        for key in node:
            if key not in QUARANTINE_KEYS:
                self.issues.append(Issue(f"unknown key {key!r} in quarantine", (*at, str(key))))
        reason, until = node.get("reason"), node.get("until")
        if not isinstance(reason, str) or not reason.strip():
            self.issues.append(Issue("a quarantine needs a `reason`", at))
        if not isinstance(until, datetime.date):
            self.issues.append(Issue("a quarantine needs `until:` as a date", at))
            return None
        day = until.date() if isinstance(until, datetime.datetime) else until
        ticket = node.get("ticket")
        value = {"until": day.isoformat(), "reason": str(reason), "ticket": str(ticket or "")}
        return Setting(value, at=at)

    def provenance(self, node: Any) -> None:
        if node is None:
            self.issues.append(Issue("case has no `provenance:`"))
        elif not isinstance(node, dict):
            self.issues.append(Issue("`provenance` must be a mapping", ("provenance",)))
        else:
            for key, value in node.items():
                if key not in PROVENANCE_KEYS:
                    self.issues.append(Issue(f"unknown key {key!r}", ("provenance", str(key))))
                elif value is None or isinstance(value, dict | list):
                    self.issues.append(
                        Issue(f"`provenance.{key}` must be text", ("provenance", str(key)))
                    )

    def vars(self, node: Any) -> dict[str, str]:
        if node is None:
            return {}
        if not isinstance(node, dict):
            self.issues.append(Issue("`vars` must be a mapping", ("vars",)))
            return {}
        values: dict[str, str] = {}
        for key, value in node.items():
            at: KeyPath = ("vars", str(key))
            values[str(key)] = "{{" + str(key) + "}}"
            if value is None or isinstance(value, bool | dict | list):
                self.issues.append(Issue(f"`vars.{key}` must be text or a file:// reference", at))
            elif isinstance(value, str) and value.startswith(FILE_REF):
                content = self.file_text(value, at)
                if content is not None:
                    values[str(key)] = content
            elif isinstance(value, datetime.date):
                values[str(key)] = value.isoformat()
            else:
                values[str(key)] = str(value)
        return values

    def required(self, data: Mapping[str, Any], tier: str, samples: int) -> Setting:
        value = data.get("required")
        if value is None:
            return Setting(default_required(tier, samples), True, at=("required",))
        if not is_whole(value) or not 1 <= value <= samples:
            self.issues.append(
                Issue(
                    f"`required` must be a whole number of samples between 1 and {samples}",
                    ("required",),
                )
            )
            return Setting(default_required(tier, samples), True, at=("required",))
        return Setting(value, at=("required",))

    def assertions(
        self, node: Any, variables: Mapping[str, str], expect_refusal: bool
    ) -> list[EffectiveAssertion]:
        if node is None:
            if not expect_refusal:
                self.issues.append(Issue("case has no `assert:` list and expects no refusal"))
            return []
        if not isinstance(node, list):
            self.issues.append(Issue("`assert` must be a list", ("assert",)))
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
        at: KeyPath = ("assert", index)
        if not isinstance(entry, dict):
            self.issues.append(Issue("an assertion must be a mapping", at))
            return None
        name = entry.get("type")
        model = assertion_model(name) if isinstance(name, str) else None
        if model is None:
            known = ", ".join(declared_types())
            self.issues.append(Issue(f"unknown assertion type {name!r} (known: {known})", at))
            return None
        for key in entry:
            if key not in model.keys and key not in COMMON_KEYS:
                self.issues.append(Issue(f"{model.name}: unknown key {key!r}", (*at, str(key))))
        params: dict[str, Setting] = {}
        for param in model.params:
            canonical = param.alias_of or param.key
            if param.key not in entry:
                if canonical not in params and not any(
                    p.key in entry for p in model.params if (p.alias_of or p.key) == canonical
                ):
                    if param.required:
                        self.issues.append(Issue(f"{model.name}: needs `{param.key}:`", at))
                    elif param.has_default:
                        params[canonical] = Setting(param.default, True, at=(*at, param.key))
                continue
            if canonical in params and not params[canonical].default:
                self.issues.append(
                    Issue(f"{model.name}: give `{canonical}` once", (*at, param.key))
                )
                continue
            setting = self.param(model, param, entry[param.key], (*at, param.key), variables)
            if setting is not None:
                params[canonical] = setting
        self.check_pattern(model, params, at)
        return EffectiveAssertion(index, model, params)

    def param(
        self,
        model: AssertionModel,
        param: Param,
        value: Any,
        at: KeyPath,
        variables: Mapping[str, str],
    ) -> Setting | None:
        label = f"{model.name}: `{param.key}`"
        kind = param.value
        if kind is Value.ANY and not isinstance(value, str):
            return Setting(value, at=at)
        if kind in (Value.NUMBER, Value.INTEGER, Value.BOOLEAN):
            return self.scalar(label, param, value, at)
        if kind is Value.SCHEMA and isinstance(value, dict):
            return Setting(value, at=at)
        if value is None or isinstance(value, bool | dict | list):
            self.issues.append(Issue(f"{label} must be text", at))
            return None
        text = value if isinstance(value, str) else str(value)
        if kind is Value.FLAGS:
            if any(letter not in _REGEX_FLAGS for letter in text):
                self.issues.append(Issue(f"{label}: unknown regex flag", at))
                return None
            return Setting(text, at=at)
        if kind in (Value.JSON_FILE, Value.SCHEMA):
            return self.json_file(label, text, at)
        if kind is Value.PATH:
            return self.path_param(label, text, at)
        return self.checked_text(label, param, self.text(text, at, kind, variables), at)

    def scalar(self, label: str, param: Param, value: Any, at: KeyPath) -> Setting | None:
        """A number, a whole number or a boolean, within the parameter's range."""
        if param.value is Value.BOOLEAN:
            if not isinstance(value, bool):
                self.issues.append(Issue(f"{label} must be true or false", at))
                return None
            return Setting(value, at=at)
        if not (is_whole(value) if param.value is Value.INTEGER else is_number(value)):
            self.issues.append(Issue(f"{label} must be a {param.value.value}", at))
            return None
        low, high = param.minimum, param.maximum
        if (low is not None and value < low) or (high is not None and value > high):
            self.issues.append(Issue(f"{label} is out of range", at))
            return None
        return Setting(value, at=at)

    def path_param(self, label: str, text: str, at: KeyPath) -> Setting | None:
        target = self.resolve(text.removeprefix(FILE_REF))
        if self.read(target) is None:
            self.issues.append(Issue(f"{label}: file {target} does not exist", at))
            return None
        self.files.append(target)
        return Setting(text.removeprefix(FILE_REF), source=target, at=at)

    def checked_text(
        self, label: str, param: Param, setting: Setting | None, at: KeyPath
    ) -> Setting | None:
        """Text that must say something (required, forbidden, source) or must be code."""
        if setting is None:
            return None
        if setting.value == "" and param.compare in _NON_EMPTY:
            self.issues.append(Issue(f"{label} is empty", at))
            return None
        if param.compare is Compare.CODE:
            try:
                compile(setting.value, "<python assertion>", "eval")
            except SyntaxError:
                self.issues.append(Issue(f"{label} is not a Python expression", at))
                return None
        return setting

    def text(
        self, value: Any, at: KeyPath, kind: Value, variables: Mapping[str, str]
    ) -> Setting | None:
        if not isinstance(value, str):
            value = str(value)
        if kind in (Value.TEXT, Value.ANY, Value.RAW) and value.startswith(FILE_REF):
            if kind is Value.RAW and at[0] != "golden":
                return Setting(value, at=at)
            content = self.file_text(value, at)
            if content is None:
                return None
            source = self.resolve(value[len(FILE_REF) :]) if self.reader is not None else ""
            return Setting(content, source=source, at=at)
        if kind is Value.RAW:
            return Setting(value, at=at)
        filled, missing = fill(value, variables)
        for name in missing:
            self.issues.append(Issue(f"uses {{{{{name}}}}} but the case has no var {name!r}", at))
        return Setting(filled, at=at)

    def json_file(self, label: str, ref: str, at: KeyPath) -> Setting | None:
        if not ref.startswith(FILE_REF):
            self.issues.append(Issue(f"{label} must be a file:// reference", at))
            return None
        content = self.file_text(ref, at)
        if content is None:
            return None
        if self.reader is None:
            return Setting(ref, at=at)
        try:
            schema = json.loads(content)
        except json.JSONDecodeError:
            self.issues.append(Issue(f"{label}: the file is not valid JSON", at))
            return None
        if not isinstance(schema, dict):
            self.issues.append(Issue(f"{label}: the schema file must hold a JSON object", at))
            return None
        return Setting(schema, source=self.resolve(ref[len(FILE_REF) :]), at=at)

    def check_pattern(
        self, model: AssertionModel, params: Mapping[str, Setting], at: KeyPath
    ) -> None:
        pattern = next((p for p in model.params if p.compare is Compare.PATTERN), None)
        if pattern is None or "value" not in params:
            return
        flags = 0
        for letter in str(params["flags"].value if "flags" in params else ""):
            flags |= _REGEX_FLAGS.get(letter, 0)
        try:
            re.compile(str(params["value"].value), flags)
        except re.error as exc:
            self.issues.append(
                Issue(f"{model.name}: bad regular expression: {exc}", (*at, "value"))
            )

    def resolve(self, relative: str) -> str:
        joined = posixpath.normpath(posixpath.join(self.folder, relative))
        return "" if joined == "." else joined

    def file_text(self, ref: str, at: KeyPath) -> str | None:
        target = self.resolve(ref[len(FILE_REF) :])
        if self.reader is None:
            return ref
        raw = self.read(target)
        if raw is None:
            self.issues.append(Issue(f"file {target} does not exist", at))
            return None
        self.files.append(target)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            self.issues.append(Issue(f"file {target} is not UTF-8 text", at))
            return None


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
    "EffectiveAssertion",
    "EffectiveCase",
    "Issue",
    "KeyPath",
    "Reader",
    "Setting",
    "SuiteBar",
    "case_id",
    "default_required",
    "effective_case",
    "file_refs",
    "suite_bar",
]
