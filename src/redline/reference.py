"""The reference page of the documentation, written from the declarations themselves.

Every key a suite, a case, an assertion or the configuration may hold is declared once
(`redline.casemodel`, `redline.config`, `redline.provider_options`); this module renders
those declarations as
Markdown, so the page cannot list a key the loader refuses or miss one it reads.
`docs/reference.md` is its output (`uv run python -m redline.reference > docs/reference.md`;
a test keeps the two equal).
"""

from __future__ import annotations

from collections.abc import Iterable

from redline import casemodel, config
from redline.casemodel import AssertionModel, Compare, Param, Value
from redline.provider_options import PROVIDER_KINDS, Option, ProviderKind, toml_value

#: What a change of a parameter does to the bar, by how its values compare (the guard's
#: rule, `redline.casemodel.diff`), in the words the page uses.
_LOOSENS = {
    Compare.CEILING: "a higher value",
    Compare.FLOOR: "a lower value",
    Compare.REQUIRED_TEXT: "text that is part of the old text, or other text",
    Compare.FORBIDDEN_TEXT: "text that contains the old text, or other text",
    Compare.SOURCE: "a longer source",
    Compare.PATTERN: "any edit not provably narrower",
    Compare.SCHEMA: "a laxer schema (keyword by keyword)",
    Compare.EXPECT: "`true` → `false`",
    Compare.EXACT: "any edit (review)",
    Compare.CODE: "any edit (review)",
    Compare.IDENTITY: "any edit (review)",
}

_VALUES = {
    Value.NUMBER: "number",
    Value.INTEGER: "whole number",
    Value.STRING: "text (`{{var}}` filled)",
    Value.TEXT: "text or `file://` (read byte for byte)",
    Value.RAW: "text, as written",
    Value.LIST: "a YAML list",
    Value.MAPPING: "a YAML mapping",
    Value.FLAGS: "regex flags (`i`, `m`, `s`, `x`)",
    Value.BOOLEAN: "`true` / `false`",
    Value.JSON_FILE: "`file://` JSON (Schema)",
    Value.PATH: "a file (relative to the case file)",
    Value.ANY: "text, or any YAML value (compared as JSON)",
}


def _keys(names: Iterable[str]) -> str:
    return ", ".join(f"`{n}`" for n in sorted(names))


def _default(param: Param) -> str:
    if param.required:
        return "required"
    if not param.has_default:
        return "optional"
    value = param.default
    shown = "true" if value is True else "false" if value is False else repr(value)
    return f"`{shown}`" if shown != "''" else "none"


def _bounds(param: Param) -> str:
    low, high = param.minimum, param.maximum
    if low is None and high is None:
        return ""
    if high is None:
        return f"≥ {low:g}"
    return f"{low:g}–{high:g}" if low is not None else f"≤ {high:g}"


def _table(params: Iterable[Param]) -> list[str]:
    """One row per parameter: its value, default, bounds and which change loosens it."""
    shown = [p for p in params if not p.alias_of]
    aliases = {p.alias_of: p.key for p in params if p.alias_of}
    if not shown:
        return ["No parameters.", ""]
    lines = ["| key | value | default | bounds | loosened by |", "|---|---|---|---|---|"]
    for p in shown:
        key = f"`{p.key}`" + (f" (or `{aliases[p.key]}`)" if p.key in aliases else "")
        value = f"one of {_keys(p.choices)}" if p.choices else _VALUES.get(p.value, str(p.value))
        cells = (key, value, _default(p), _bounds(p), _LOOSENS.get(p.compare, str(p.compare)))
        lines.append("| " + " | ".join(cells) + " |")
    return [*lines, ""]


def _assertion(model: AssertionModel) -> list[str]:
    summary = model.summary[:1].upper() + model.summary[1:]
    return [f"### `{model.name}`", "", summary + ".", "", *_table(model.params)]


def _option_default(option: Option) -> str:
    """The default as the file would write it; in words when it depends on the machine."""
    if option.default_words:
        return option.default_words
    return "none" if option.default is None else f"`{toml_value(option.default)}`"


def _provider(kind: ProviderKind) -> list[str]:
    lines = [f'### `type = "{kind.name}"`', ""]
    lines += ["| option | value | default | sets |", "|---|---|---|---|"]
    for o in kind.options:
        lines.append(f"| `{o.key}` | {o.expected} | {_option_default(o)} | {o.meaning} |")
    return [*lines, ""]


def _settings() -> list[str]:
    """The declared case settings (keys a case may write beside its own), when any."""
    settings = casemodel.case_settings()
    if not settings:
        return []
    return ["### Case settings", "", "Keys declared as settings of a case:", "", *_table(settings)]


def reference_markdown() -> str:
    """The whole reference page."""
    lines = [
        "# Reference",
        "",
        "Generated from redline's own declarations (`redline.casemodel`, `redline.config`,",
        "`redline.provider_options`) by `uv run python -m redline.reference >",
        "docs/reference.md`; a test fails when the two differ. [Writing cases](writing-cases.md)",
        "shows each key and assertion in an example, [Configuration](configuration.md) the",
        "configuration file.",
        "",
        "## Suite files (`suite.yaml`)",
        "",
        f"Keys: {_keys(casemodel.SUITE_KEYS)}.",
        "",
        f"- `prompt`: {_keys(casemodel.PROMPT_KEYS)}.",
        f"- `tier`: {_keys(casemodel.TIERS)} (default `{casemodel.DEFAULT_TIER}`).",
        f"- `samples`: a whole number (default {casemodel.DEFAULT_SAMPLES}), or a mapping of "
        f"{_keys(casemodel.SAMPLES_KEYS)} (sequential sampling).",
        f"- `seed`: `{casemodel.FROZEN_SEED}` or a base integer.",
        f"- A change of {_keys(casemodel.GENERATION_KEYS)} is a prompt change to the guard.",
        "",
        "## Case files",
        "",
        f"Keys: {_keys(casemodel.case_keys())}.",
        "",
        f"- `provenance`: {_keys(casemodel.PROVENANCE_KEYS)}.",
        f"- `quarantine`: {_keys(casemodel.QUARANTINE_KEYS)}.",
        "- `tier`, `samples`: as in the suite; `required`: passes needed out of the samples.",
        "- every assertion: `type`, its own keys below, and "
        f"{_keys(casemodel.COMMON_KEYS - {'type'})}.",
        f"- a value starting with `{casemodel.FILE_REF}` names a file relative to the case file.",
        "",
        *_settings(),
        "## Assertion types",
        "",
        "*Loosened by* is the change the guard calls a loosening (it refuses one together",
        "with a prompt change); the opposite change is fine.",
        "",
    ]
    for name in casemodel.declared_types():
        model = casemodel.assertion_model(name)
        assert model is not None
        lines += _assertion(model)
    lines += [
        "## Configuration (`redline.toml`, or `[tool.redline]` in `pyproject.toml`)",
        "",
        f"Top-level keys: {_keys(config.CONFIG_KEYS)}.",
        "",
        "- a provider table (`[providers.NAME]`): `type` (one of "
        f"{_keys(PROVIDER_KINDS)}; the table's name by default) and that type's options "
        "below; a key written as `api_key` is refused (name its variable in `api_key_env`). "
        "[Providers](providers.md) says more.",
        f'- a price (`[prices."MODEL"]`): {_keys(config.PRICE_KEYS)}; optionally '
        f"{_keys(config.CACHE_PRICE_KEYS)} for prompt tokens written to and read from the "
        "provider's cache ([Large suites and cost](scale.md)), and "
        f"`{config.BATCH_PRICE_KEY}`: the share a batch API takes off the price (default "
        f"{config.DEFAULT_BATCH_DISCOUNT:g}, [Batch mode](batch.md)).",
        f"- files read, the first found wins: {_keys(config.CONFIG_FILES)}.",
        "",
        "## Provider options",
        "",
    ]
    for kind in PROVIDER_KINDS.values():
        lines += _provider(kind)
    return "\n".join(lines)


if __name__ == "__main__":
    print(reference_markdown(), end="")
