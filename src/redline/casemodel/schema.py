"""JSON Schema laxness: a schema a case validates against, compared keyword by keyword."""

from __future__ import annotations

from typing import Any

from redline.casemodel.values import Change as Kind
from redline.casemodel.values import differs, number_change, show

_LOWER_BOUNDS = (
    "minimum",
    "exclusiveMinimum",
    "minLength",
    "minItems",
    "minProperties",
    "minContains",
)


_UPPER_BOUNDS = (
    "maximum",
    "exclusiveMaximum",
    "maxLength",
    "maxItems",
    "maxProperties",
    "maxContains",
)


def schema_diff(old: Any, new: Any, at: str) -> list[tuple[Kind, str]]:
    """How a JSON Schema changed, keyword by keyword, recursively: laxer is a loosening."""
    out: list[tuple[Kind, str]] = []
    if old == new:
        return out
    if (
        isinstance(old, bool)
        or isinstance(new, bool)
        or not isinstance(old, dict)
        or not (isinstance(new, dict))
    ):
        if _strictness(new) > _strictness(old):
            out.append((Kind.LOOSER, f"{at} {show(old)} → {show(new)}"))
        elif _strictness(new) < _strictness(old):
            out.append((Kind.TIGHTER, f"{at} {show(old)} → {show(new)}"))
        else:
            out.append((Kind.REVIEW, f"{at} {show(old)} → {show(new)} (changed, review)"))
        return out

    t0, t1 = _types(old.get("type")), _types(new.get("type"))
    if t0 != t1:
        detail = f"{at} type {show(old.get('type'))} → {show(new.get('type'))}"
        if t1 is None or (t0 is not None and not t1 <= _widened(t0)):
            out.append((Kind.LOOSER, detail + " (widened)"))
        else:
            out.append((Kind.TIGHTER, detail))

    r0 = set(old.get("required", []) or [])
    r1 = set(new.get("required", []) or [])
    out += [(Kind.LOOSER, f"{at} required property {p!r} removed") for p in sorted(r0 - r1)]
    out += [(Kind.TIGHTER, f"{at} required property {p!r} added") for p in sorted(r1 - r0)]

    for key in ("additionalProperties", "unevaluatedProperties", "additionalItems"):
        a, b = old.get(key, True), new.get(key, True)
        if a == b:
            continue
        if isinstance(a, dict) and isinstance(b, dict):
            out += schema_diff(a, b, f"{at}.{key}")
        elif _strictness(b) > _strictness(a):
            out.append((Kind.LOOSER, f"{at} {key} {show(a)} → {show(b)} (relaxed)"))
        else:
            out.append((Kind.TIGHTER, f"{at} {key} {show(a)} → {show(b)}"))

    if "enum" in old or "enum" in new:
        e0, e1 = old.get("enum"), new.get("enum")
        if e1 is None:
            out.append((Kind.LOOSER, f"{at} enum {show(e0)} removed"))
        elif e0 is None:
            out.append((Kind.TIGHTER, f"{at} enum {show(e1)} added"))
        else:
            wider = [v for v in e1 if v not in e0]
            narrower = [v for v in e0 if v not in e1]
            if wider:
                out.append((Kind.LOOSER, f"{at} enum widened by {show(wider)}"))
            if narrower:
                out.append((Kind.TIGHTER, f"{at} enum narrowed by {show(narrower)}"))

    for key in (
        "const",
        "pattern",
        "format",
        "$ref",
        "not",
        "if",
        "then",
        "else",
        "multipleOf",
        "contentMediaType",
    ):
        a, b = old.get(key), new.get(key)
        if not differs(a, b):
            continue
        if b is None:
            out.append((Kind.LOOSER, f"{at} {key} {show(a)} removed"))
        elif a is None:
            out.append((Kind.TIGHTER, f"{at} {key} {show(b)} added"))
        else:
            out.append((Kind.REVIEW, f"{at} {key} {show(a)} → {show(b)} (changed, review)"))

    for key in _LOWER_BOUNDS + _UPPER_BOUNDS:
        a, b = old.get(key), new.get(key)
        if differs(a, b):
            kind = number_change(a, b, higher_is_looser=key in _UPPER_BOUNDS)
            detail = f"{at} {key} {show(a)} → {show(b)}"
            out.append((kind, detail + (" (changed, review)" if kind is Kind.REVIEW else "")))

    if old.get("uniqueItems") and not new.get("uniqueItems"):
        out.append((Kind.LOOSER, f"{at} uniqueItems true → false"))
    elif new.get("uniqueItems") and not old.get("uniqueItems"):
        out.append((Kind.TIGHTER, f"{at} uniqueItems false → true"))

    for key in ("properties", "patternProperties", "$defs", "definitions", "dependentSchemas"):
        p0 = old.get(key) or {}
        p1 = new.get(key) or {}
        if not isinstance(p0, dict) or not isinstance(p1, dict):
            continue
        for name in sorted(set(p0) | set(p1)):
            sub = f"{at}.{key}.{name}"
            if name not in p1:
                out.append((Kind.LOOSER, f"{sub} no longer described"))
            elif name not in p0:
                out.append((Kind.TIGHTER, f"{sub} described"))
            else:
                out += schema_diff(p0[name], p1[name], sub)

    for key in ("items", "contains", "propertyNames"):
        a, b = old.get(key), new.get(key)
        if not differs(a, b):
            continue
        if isinstance(a, list) or isinstance(b, list):
            out += _schema_list_diff(a, b, f"{at}.{key}", more_is_looser=False)
        elif b is None:
            out.append((Kind.LOOSER, f"{at}.{key} removed"))
        elif a is None:
            out.append((Kind.TIGHTER, f"{at}.{key} added"))
        else:
            out += schema_diff(a, b, f"{at}.{key}")

    out += _schema_list_diff(
        old.get("prefixItems"),
        new.get("prefixItems"),
        f"{at}.prefixItems",
        more_is_looser=False,
    )
    for key in ("anyOf", "oneOf"):
        out += _schema_list_diff(old.get(key), new.get(key), f"{at}.{key}", more_is_looser=True)
    out += _schema_list_diff(
        old.get("allOf"), new.get("allOf"), f"{at}.allOf", more_is_looser=False
    )
    return out


def _schema_list_diff(
    old: Any, new: Any, at: str, *, more_is_looser: bool
) -> list[tuple[Kind, str]]:
    a = old if isinstance(old, list) else ([] if old is None else [old])
    b = new if isinstance(new, list) else ([] if new is None else [new])
    if a == b:
        return []
    out: list[tuple[Kind, str]] = []
    if old is not None and new is None:
        return [(Kind.LOOSER, f"{at} removed")]
    if old is None and new is not None:
        return [(Kind.LOOSER if more_is_looser else Kind.TIGHTER, f"{at} added")]
    rest_a = [x for x in a if x not in b]
    rest_b = [x for x in b if x not in a]
    for i, (x, y) in enumerate(zip(rest_a, rest_b, strict=False)):
        out += schema_diff(x, y, f"{at}[{i}]")
    if len(rest_b) > len(rest_a):
        kind = Kind.LOOSER if more_is_looser else Kind.TIGHTER
        out.append((kind, f"{at}: {len(rest_b) - len(rest_a)} branch(es) added"))
    elif len(rest_a) > len(rest_b):
        kind = Kind.TIGHTER if more_is_looser else Kind.LOOSER
        out.append((kind, f"{at}: {len(rest_a) - len(rest_b)} branch(es) removed"))
    return out


def _strictness(value: Any) -> int:
    """false (nothing allowed) < a schema < true / absent (anything allowed)."""
    if value is False:
        return 0
    if value is True or value is None or value == {}:
        return 2
    return 1


def _types(value: Any) -> set[str] | None:
    if value is None:
        return None
    if isinstance(value, str):
        return {value}
    if isinstance(value, list):
        return {str(v) for v in value}
    return {str(value)}


def _widened(types: set[str]) -> set[str]:
    out = set(types)
    if "number" in out:
        out.add("integer")
    return out
