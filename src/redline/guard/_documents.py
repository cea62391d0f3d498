"""Suite and case YAML compared as parsed documents: which change lowers the bar."""

from __future__ import annotations

import json
import math
import posixpath
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

from redline.gitio import Snapshot, is_binary
from redline.guard._findings import Finding, Kind, differs, directional, show
from redline.guard._schema import schema_diff
from redline.outcome import default_required
from redline.yamlsource import utf8_problem, yaml_problem

#: Assertion types whose `value` is a ceiling: raising it lets more through.
MAX_TYPES = frozenset({"max-chars", "max-words", "max-tokens", "max-latency-ms", "max-cost"})
#: Assertion types whose `value` is a floor: lowering it lets more through.
MIN_TYPES = frozenset({"compression-ratio", "distinct-n", "similarity", "min-chars", "min-words"})
#: Assertion types whose `value` is a list of required / forbidden strings.
STRING_SET_TYPES = frozenset({"contains", "icontains", "not-contains"})
#: Assertion types whose `value` is code or an exact text: any edit needs a reviewer.
REWRITE_TYPES = frozenset({"regex", "python", "equals"})
#: Keys that explain an assertion and change nothing it checks.
ANNOTATION_KEYS = frozenset(
    {"note", "notes", "reason", "why", "description", "comment", "provenance", "label"}
)
#: Keys of rubrics / judge settings that are pass bars, not judge prompt text.
_FLOOR_KEYS = frozenset({"min_kappa", "min_score", "threshold", "min", "margin", "similarity"})
_CEILING_KEYS = frozenset({"max_score", "max"})

_Loader: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


@dataclass
class Parsed:
    data: Any
    problem: Finding | None = None


@dataclass
class Side:
    """One side of the comparison with parse caches; `name` is how messages call it."""

    snap: Snapshot
    name: str
    _yaml: dict[str, Parsed] = field(default_factory=dict)

    def read(self, path: str) -> bytes | None:
        return self.snap.read(path)

    def yaml(self, path: str) -> Parsed:
        if path not in self._yaml:
            self._yaml[path] = parse_yaml(self.read(path), path, self.name)
        return self._yaml[path]


def parse_yaml(data: bytes | None, path: str, side: str) -> Parsed:
    if data is None:
        return Parsed(None)
    if is_binary(data):
        return Parsed(None, Finding(Kind.BROKEN, path, f"{side} side: binary, not YAML", path))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column, message = utf8_problem(exc)
        detail = f"{side} side: line {line}, column {column}: {message}"
        return Parsed(None, Finding(Kind.BROKEN, path, detail, path))
    try:
        return Parsed(yaml.load(text, Loader=_Loader))
    except yaml.MarkedYAMLError as exc:
        problem = yaml_problem(exc, text, path)
        where = f"line {problem.line}, column {problem.column}"
        detail = f"{side} side does not parse: {where}: {problem.message}"
        return Parsed(None, Finding(Kind.BROKEN, path, detail, path))
    except yaml.YAMLError as exc:
        detail = f"{side} side does not parse: {exc}"
        return Parsed(None, Finding(Kind.BROKEN, path, detail, path))


@dataclass
class Context:
    """What a comparison needs beyond the two YAML documents."""

    allow_rewrite: bool = False
    old: Side | None = None
    new: Side | None = None
    schema_pairs: dict[tuple[str, str], list[str]] = field(default_factory=dict)


_GENERATION_KEYS = ("model", "temperature", "max_tokens", "top_p", "seed", "stop")


def compare_suite(ctx: Context, name: str, old: Any, new: Any) -> list[Finding]:
    subject = f"suite {name}"
    if not isinstance(old, dict) or not isinstance(new, dict):
        return _not_a_mapping(subject, old, new)
    findings: list[Finding] = []
    for key in _GENERATION_KEYS:
        if differs(old.get(key), new.get(key)):
            detail = f"{key} {show(old.get(key))} → {show(new.get(key))}"
            findings.append(Finding(Kind.PROMPT, subject, detail))
    old_d, new_d = suite_defaults(old), suite_defaults(new)
    findings += _compare_bar(subject, old_d, new_d, old_d, new_d)
    findings += _compare_assert_lists(ctx, subject, old_d.get("assert"), new_d.get("assert"))
    findings += _compare_judge(ctx, subject, old.get("judge"), new.get("judge"))
    return findings


def suite_defaults(suite: Mapping[str, Any]) -> dict[str, Any]:
    """A suite's defaults for its cases: top-level keys, overridden by a `defaults:` block."""
    merged = {
        k: v
        for k, v in suite.items()
        if k in ("samples", "tier", "required", "expect_refusal", "assert")
    }
    extra = suite.get("defaults")
    if isinstance(extra, dict):
        merged.update(extra)
    return merged


def _compare_judge(ctx: Context, subject: str, old: Any, new: Any) -> list[Finding]:
    if old == new:
        return []
    if not isinstance(old, dict) or not isinstance(new, dict):
        if old is not None and new is None:
            return [Finding(Kind.LOOSENING, subject, "judge removed")]
        return [Finding(Kind.PROMPT, subject, f"judge {show(old)} → {show(new)}")]
    findings = compare_bars_in(ctx, f"{subject}: judge", old, new)
    rest_old = without_bars(old)
    rest_new = without_bars(new)
    if rest_old != rest_new:
        findings.append(Finding(Kind.PROMPT, subject, f"judge {show(rest_old)} → {show(rest_new)}"))
    return findings


def compare_case(
    ctx: Context,
    name: str,
    old: Any,
    new: Any,
    old_suite: Mapping[str, Any],
    new_suite: Mapping[str, Any],
    *,
    old_folder: str = "",
    new_folder: str = "",
) -> list[Finding]:
    subject = f"case {name}"
    if not isinstance(old, dict) or not isinstance(new, dict):
        return _not_a_mapping(subject, old, new)
    findings: list[Finding] = []
    if old.get("id") != new.get("id"):
        findings.append(
            Finding(Kind.NOTE, subject, f"id {show(old.get('id'))} → {show(new.get('id'))}")
        )
    findings += _compare_bar(subject, old, new, old_suite, new_suite)
    findings += _compare_assert_lists(
        ctx, subject, old.get("assert"), new.get("assert"), old_folder, new_folder
    )
    if differs(old.get("vars"), new.get("vars")):
        findings.append(Finding(Kind.NOTE, subject, "vars changed (the case's input)"))
    return findings


def _compare_bar(
    subject: str,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    old_suite: Mapping[str, Any],
    new_suite: Mapping[str, Any],
) -> list[Finding]:
    """Tier, samples, required and expect_refusal: the pass bar of a case or suite."""
    findings: list[Finding] = []

    def pick(key: str, own: Mapping[str, Any], suite: Mapping[str, Any], fallback: Any) -> Any:
        return own[key] if key in own else suite.get(key, fallback)

    old_tier = pick("tier", old, old_suite, "contract")
    new_tier = pick("tier", new, new_suite, "contract")
    if ("tier" in old or "tier" in new) and old_tier != new_tier:
        kind = (
            Kind.LOOSENING
            if (old_tier, new_tier) == ("contract", "quality")
            else (
                Kind.TIGHTENING if (old_tier, new_tier) == ("quality", "contract") else Kind.REWRITE
            )
        )
        findings.append(Finding(kind, subject, f"tier {show(old_tier)} → {show(new_tier)}"))

    own_keys = ("samples", "required")
    if any(k in old or k in new for k in own_keys):
        findings += _compare_rate(
            subject,
            pick("samples", old, old_suite, None),
            pick("required", old, old_suite, None),
            old_tier,
            pick("samples", new, new_suite, None),
            pick("required", new, new_suite, None),
            new_tier,
        )

    before = bool(pick("expect_refusal", old, old_suite, False))
    after = bool(pick("expect_refusal", new, new_suite, False))
    if ("expect_refusal" in old or "expect_refusal" in new) and before != after:
        kind = Kind.LOOSENING if before else Kind.TIGHTENING
        findings.append(Finding(kind, subject, f"expect_refusal {show(before)} → {show(after)}"))
    return findings


def _compare_rate(
    subject: str,
    old_samples: Any,
    old_required: Any,
    old_tier: Any,
    new_samples: Any,
    new_required: Any,
    new_tier: Any,
) -> list[Finding]:
    """Loosened: fewer passes required, a lower rate, or fewer samples at no higher a rate."""
    s0, s1 = _as_count(old_samples), _as_count(new_samples)
    if s0 is None or s1 is None:
        if differs(old_samples, new_samples) or differs(old_required, new_required):
            return [
                Finding(
                    Kind.REWRITE,
                    subject,
                    f"samples {show(old_samples)} → {show(new_samples)}, required "
                    f"{show(old_required)} → {show(new_required)} (changed, review)",
                )
            ]
        return []
    r0 = _required_count(old_required, s0, old_tier)
    r1 = _required_count(new_required, s1, new_tier)
    if r0 is None or r1 is None:
        return [
            Finding(
                Kind.REWRITE,
                subject,
                f"required {show(old_required)} → {show(new_required)} (changed, review)",
            )
        ]
    if (s0, r0) == (s1, r1):
        return []
    f0, f1 = r0 / s0, r1 / s1
    if s0 == s1:
        detail = f"required {_show_required(old_required, r0)} → {_show_required(new_required, r1)}"
        detail += f" (of {s1} samples)"
        return [Finding(Kind.LOOSENING if r1 < r0 else Kind.TIGHTENING, subject, detail)]
    detail = f"samples {s0} → {s1}, required {r0}/{s0} → {r1}/{s1} ({f0:.0%} → {f1:.0%})"
    if f1 < f0 - 1e-9:
        return [Finding(Kind.LOOSENING, subject, detail)]
    if s1 < s0 and f1 <= f0 + 1e-9:
        return [Finding(Kind.LOOSENING, subject, detail + ": fewer samples, no higher a bar")]
    return [Finding(Kind.TIGHTENING, subject, detail)]


def _as_count(value: Any) -> int | None:
    if value is None:
        return 5
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def _required_count(value: Any, samples: int, tier: Any) -> int | None:
    if value is None:
        return default_required(str(tier), samples)
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and 0 <= value <= 1:
        return max(0, math.ceil(value * samples - 1e-9))
    return None


def _show_required(raw: Any, count: int) -> str:
    return f"{raw:g}" if isinstance(raw, float) else str(count)


def _compare_assert_lists(
    ctx: Context,
    subject: str,
    old: Any,
    new: Any,
    old_folder: str = "",
    new_folder: str = "",
) -> list[Finding]:
    if old is None and new is None:
        return []
    if (old is not None and not isinstance(old, list)) or (
        new is not None and not isinstance(new, list)
    ):
        return [
            Finding(Kind.REWRITE, subject, "assert is not a list on one side (changed, review)")
        ]
    before = [_normalise(a) for a in old or []]
    after = [_normalise(a) for a in new or []]
    pairs, removed, added = _align(before, after)
    findings: list[Finding] = []
    for i, j in pairs:
        findings += _compare_assertion(ctx, subject, j, before[i], after[j], old_folder, new_folder)
    for i in removed:
        a = before[i]
        findings.append(Finding(Kind.LOOSENING, subject, f"assert[{i}] {_describe(a)} removed"))
    for j in added:
        findings.append(
            Finding(Kind.TIGHTENING, subject, f"assert[{j}] {_describe(after[j])} added")
        )
    return findings


def schema_refs(document: Any, folder: str) -> list[str]:
    """Repository paths of the JSON Schemas a case (or suite defaults) validates against."""
    if not isinstance(document, dict):
        return []
    items = document.get("assert")
    found = []
    for item in items if isinstance(items, list) else []:
        ref = _normalise(item).get("schema")
        path = _schema_path(ref, folder)
        if path is not None:
            found.append(path)
    return found


def _normalise(item: Any) -> dict[str, Any]:
    """`{type: x, ...}` as written, or the short form `{x: value}`, as one shape."""
    if isinstance(item, dict) and "type" in item:
        found = dict(item)
        if found["type"] == "is-json" and "value" in found and "schema" not in found:
            found["schema"] = found.pop("value")  # the schema may be given as either key
        return found
    if isinstance(item, dict) and len(item) == 1:
        ((key, value),) = item.items()
        return {"type": str(key), "value": value}
    return {"type": "?", "value": item}


def _key(a: Mapping[str, Any]) -> str:
    return json.dumps(
        {k: v for k, v in a.items() if k not in ANNOTATION_KEYS}, sort_keys=True, default=str
    )


def _align(
    before: Sequence[dict[str, Any]], after: Sequence[dict[str, Any]]
) -> tuple[list[tuple[int, int]], list[int], list[int]]:
    """Pair old and new assertions: identical first, then same (type, value), then same type.

    An inserted assertion thereby leaves every later one paired with its old self.
    """
    left = list(range(len(before)))
    right = list(range(len(after)))
    pairs: list[tuple[int, int]] = []
    keys: list[Callable[[Mapping[str, Any]], str]] = [
        _key,
        lambda a: json.dumps([a.get("type"), a.get("value")], sort_keys=True, default=str),
        lambda a: str(a.get("type")),
    ]
    for key in keys:
        for i in list(left):
            k = key(before[i])
            candidates = [j for j in right if key(after[j]) == k]
            if not candidates:
                continue
            j = min(candidates, key=lambda c: abs(c - i))
            pairs.append((i, j))
            left.remove(i)
            right.remove(j)
    return sorted(pairs), left, right


def _compare_assertion(
    ctx: Context,
    subject: str,
    index: int,
    old: Mapping[str, Any],
    new: Mapping[str, Any],
    old_folder: str,
    new_folder: str,
) -> list[Finding]:
    kind_name = str(new.get("type"))
    where = f"assert[{index}] {kind_name}"
    findings: list[Finding] = []
    keys = sorted((set(old) | set(new)) - {"type"} - ANNOTATION_KEYS)
    for key in keys:
        a, b = old.get(key), new.get(key)
        if not differs(a, b):
            continue
        label = where if key == "value" else f"{where} {key}"
        if key == "schema":
            findings += _compare_schema_ref(ctx, subject, label, a, b, old_folder, new_folder)
        elif key == "rubric":
            findings.append(Finding(Kind.PROMPT, subject, f"{label} {show(a)} → {show(b)}"))
        elif key == "value":
            findings += _compare_value(ctx, subject, label, kind_name, a, b)
        else:
            findings += _compare_number_key(ctx, subject, label, kind_name, key, a, b)
    return findings


def _compare_value(
    ctx: Context, subject: str, label: str, kind_name: str, a: Any, b: Any
) -> list[Finding]:
    if kind_name in MAX_TYPES or kind_name.startswith("max-"):
        return [directional(subject, label, a, b, higher_is_looser=True)]
    if kind_name in MIN_TYPES or kind_name.startswith("min-"):
        return [directional(subject, label, a, b, higher_is_looser=False)]
    if kind_name in STRING_SET_TYPES:
        old_items = _as_list(a)
        new_items = _as_list(b)
        lost = [x for x in old_items if x not in new_items]
        gained = [x for x in new_items if x not in old_items]
        if lost and gained and len(old_items) == 1 == len(new_items):
            return [Finding(Kind.LOOSENING, subject, f"{label} {show(a)} → {show(b)} (changed)")]
        findings = [Finding(Kind.LOOSENING, subject, f"{label} {show(x)} removed") for x in lost]
        findings += [Finding(Kind.TIGHTENING, subject, f"{label} {show(x)} added") for x in gained]
        return findings
    if kind_name in REWRITE_TYPES:
        return [_rewrite(ctx, subject, label, a, b)]
    if kind_name == "refusal":
        a = True if a is None else a  # `value` defaults to true: a refusal is expected
        b = True if b is None else b
        if bool(a) and not bool(b):
            return [Finding(Kind.LOOSENING, subject, f"{label} {show(a)} → {show(b)}")]
        if bool(b) and not bool(a):
            return [Finding(Kind.TIGHTENING, subject, f"{label} {show(a)} → {show(b)}")]
        return []
    return [_rewrite(ctx, subject, label, a, b)]


def _compare_number_key(
    ctx: Context, subject: str, label: str, kind_name: str, key: str, a: Any, b: Any
) -> list[Finding]:
    floor = key in _FLOOR_KEYS or key.startswith("min")
    ceiling = key in _CEILING_KEYS or key.startswith("max")
    if kind_name.startswith("not-") and key in ("threshold", "similarity"):
        floor, ceiling = False, True  # a forbidden concept: a higher bar lets more through
    if floor or ceiling:
        return [directional(subject, label, a, b, higher_is_looser=ceiling)]
    return [_rewrite(ctx, subject, label, a, b)]


def _rewrite(ctx: Context, subject: str, label: str, a: Any, b: Any) -> Finding:
    detail = f"{label} {show(a)} → {show(b)} (changed, review"
    detail += "; allowed by --allow-rewrite)" if ctx.allow_rewrite else ")"
    return Finding(Kind.REWRITE, subject, detail)


def compare_bars_in(ctx: Context, subject: str, old: Any, new: Any) -> list[Finding]:
    """Pass bars (min_kappa, min_score, max_score, …) anywhere in a rubric or judge block."""
    bars_old, bars_new = _bars(old), _bars(new)
    findings = []
    for path in sorted(set(bars_old) | set(bars_new)):
        a, b = bars_old.get(path), bars_new.get(path)
        if not differs(a, b):
            continue
        key = path.rsplit(".", 1)[-1]
        findings += _compare_number_key(ctx, subject, path, "", key, a, b)
    return findings


def _bars(data: Any, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if k in _FLOOR_KEYS or k in _CEILING_KEYS:
                found[path] = v
            else:
                found.update(_bars(v, path))
    return found


def without_bars(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            k: without_bars(v)
            for k, v in data.items()
            if k not in _FLOOR_KEYS and k not in _CEILING_KEYS
        }
    return data


def _compare_schema_ref(
    ctx: Context,
    subject: str,
    label: str,
    a: Any,
    b: Any,
    old_folder: str,
    new_folder: str,
) -> list[Finding]:
    if b is None:
        return [Finding(Kind.LOOSENING, subject, f"{label} {show(a)} removed")]
    if a is None:
        return [Finding(Kind.TIGHTENING, subject, f"{label} {show(b)} added")]
    if isinstance(a, dict) and isinstance(b, dict):
        return [
            Finding(kind, subject, f"{label} {detail}") for kind, detail in schema_diff(a, b, "$")
        ]
    old_path = _schema_path(a, old_folder)
    new_path = _schema_path(b, new_folder)
    if old_path is None or new_path is None or ctx.old is None:
        return [_rewrite(ctx, subject, label, a, b)]
    ctx.schema_pairs.setdefault((old_path, new_path), []).append(subject)
    return []


def _schema_path(ref: Any, folder: str) -> str | None:
    if isinstance(ref, str) and ref.strip():
        return join_path(folder, ref.strip().removeprefix("file://"))
    return None


def _not_a_mapping(subject: str, old: Any, new: Any) -> list[Finding]:
    if old is None and new is None:
        return []
    side = "old" if not isinstance(old, dict) else "new"
    return [Finding(Kind.BROKEN, subject, f"{side} side is not a YAML mapping")]


def name_of(data: Any, path: str) -> str:
    if isinstance(data, dict):
        for key in ("id", "name"):
            value = data.get(key)
            if isinstance(value, str | int) and str(value).strip():
                return str(value)
    base = posixpath.basename(path.rstrip("/")) or path
    for suffix in (".yaml", ".yml"):
        base = base.removesuffix(suffix)
    return base


def _describe(a: Mapping[str, Any]) -> str:
    text = str(a.get("type"))
    if "value" in a:
        text += f" {show(a['value'])}"
    elif "schema" in a:
        text += f" {show(a['schema'])}"
    elif "rubric" in a:
        text += f" {show(a['rubric'])}"
    return text


def _as_list(value: Any) -> list[Any]:
    if value is None:
        return []
    return list(value) if isinstance(value, list) else [value]


def join_path(folder: str, rel: str) -> str:
    joined = posixpath.normpath(posixpath.join(folder, rel)) if folder else posixpath.normpath(rel)
    return "" if joined == "." else joined
