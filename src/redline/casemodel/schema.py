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


Diff = list[tuple[Kind, str]]


def schema_problem(schema: Any) -> str | None:
    """Why `schema` is no JSON Schema (where, what, which draft said so), None when it is."""
    if not isinstance(schema, dict):
        return "a JSON Schema is an object"
    from jsonschema import SchemaError
    from jsonschema.validators import validator_for

    validator = validator_for(schema)
    try:
        validator.check_schema(schema)
    except SchemaError as exc:
        where = "/".join(str(p) for p in exc.path) or "(root)"
        return f"at {where}: {exc.message} (checked as {validator.__name__})"
    return None


Schema = dict[str, Any]


def schema_diff(old: Any, new: Any, at: str) -> Diff:
    """How a JSON Schema changed, keyword by keyword, recursively: laxer is a loosening."""
    if old == new:
        return []
    if isinstance(old, bool) or isinstance(new, bool) or not isinstance(old, dict):
        return _whole(old, new, at)
    if not isinstance(new, dict):
        return _whole(old, new, at)
    out: Diff = []
    for keywords in _KEYWORD_GROUPS:
        out += keywords(old, new, at)
    return out


def _whole(old: Any, new: Any, at: str) -> Diff:
    """`true`, `false` or a schema replaced by another of these."""
    if _strictness(new) > _strictness(old):
        return [(Kind.LOOSER, f"{at} {show(old)} → {show(new)}")]
    if _strictness(new) < _strictness(old):
        return [(Kind.TIGHTER, f"{at} {show(old)} → {show(new)}")]
    return [(Kind.REVIEW, f"{at} {show(old)} → {show(new)} (changed, review)")]


def _type(old: Schema, new: Schema, at: str) -> Diff:
    t0, t1 = _types(old.get("type")), _types(new.get("type"))
    if t0 == t1:
        return []
    detail = f"{at} type {show(old.get('type'))} → {show(new.get('type'))}"
    if t1 is None or (t0 is not None and not t1 <= _widened(t0)):
        return [(Kind.LOOSER, detail + " (widened)")]
    return [(Kind.TIGHTER, detail)]


def _required(old: Schema, new: Schema, at: str) -> Diff:
    r0 = set(old.get("required", []) or [])
    r1 = set(new.get("required", []) or [])
    out = [(Kind.LOOSER, f"{at} required property {p!r} removed") for p in sorted(r0 - r1)]
    return out + [(Kind.TIGHTER, f"{at} required property {p!r} added") for p in sorted(r1 - r0)]


def _additional(old: Schema, new: Schema, at: str) -> Diff:
    """What other properties or items may be: absent or `true` allows anything."""
    out: Diff = []
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
    return out


def _enum(old: Schema, new: Schema, at: str) -> Diff:
    if "enum" not in old and "enum" not in new:
        return []
    e0, e1 = old.get("enum"), new.get("enum")
    if e1 is None:
        return [(Kind.LOOSER, f"{at} enum {show(e0)} removed")]
    if e0 is None:
        return [(Kind.TIGHTER, f"{at} enum {show(e1)} added")]
    out: Diff = []
    wider = [v for v in e1 if v not in e0]
    narrower = [v for v in e0 if v not in e1]
    if wider:
        out.append((Kind.LOOSER, f"{at} enum widened by {show(wider)}"))
    if narrower:
        out.append((Kind.TIGHTER, f"{at} enum narrowed by {show(narrower)}"))
    return out


#: Keywords whose edit cannot be ordered: adding one tightens, removing loosens, else review.
_OPAQUE = (
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
)


def _opaque(old: Schema, new: Schema, at: str) -> Diff:
    out: Diff = []
    for key in _OPAQUE:
        a, b = old.get(key), new.get(key)
        if not differs(a, b):
            continue
        if b is None:
            out.append((Kind.LOOSER, f"{at} {key} {show(a)} removed"))
        elif a is None:
            out.append((Kind.TIGHTER, f"{at} {key} {show(b)} added"))
        else:
            out.append((Kind.REVIEW, f"{at} {key} {show(a)} → {show(b)} (changed, review)"))
    return out


def _bounds(old: Schema, new: Schema, at: str) -> Diff:
    out: Diff = []
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
    return out


def _described(old: Schema, new: Schema, at: str) -> Diff:
    """Named subschemas (properties, definitions): one no longer described allows anything."""
    out: Diff = []
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
    return out


def _subschemas(old: Schema, new: Schema, at: str) -> Diff:
    """Schemas of items, contained values and property names."""
    out: Diff = []
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
    return out


def _branches(old: Schema, new: Schema, at: str) -> Diff:
    """Lists of schemas: one more `anyOf`/`oneOf` branch loosens, one more `allOf` tightens."""
    out: Diff = []
    for key, more_is_looser in (
        ("prefixItems", False),
        ("anyOf", True),
        ("oneOf", True),
        ("allOf", False),
    ):
        out += _schema_list_diff(
            old.get(key), new.get(key), f"{at}.{key}", more_is_looser=more_is_looser
        )
    return out


_KEYWORD_GROUPS = (
    _type,
    _required,
    _additional,
    _enum,
    _opaque,
    _bounds,
    _described,
    _subschemas,
    _branches,
)


def _schema_list_diff(old: Any, new: Any, at: str, *, more_is_looser: bool) -> Diff:
    a = old if isinstance(old, list) else ([] if old is None else [old])
    b = new if isinstance(new, list) else ([] if new is None else [new])
    if a == b:
        return []
    out: Diff = []
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
