"""Records as JSON objects, derived from their definitions: the export's lines and the
store's columns of nested records (a sample's tool calls and loop steps) both use it."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from enum import Enum
from typing import Any, TypeVar, cast

from redline.vocabulary.records import FieldKind, RecordField, record_fields
from redline.vocabulary.verdicts import VERDICT_ORDER, Verdict

R = TypeVar("R")


def record_json(record: Any) -> dict[str, Any]:
    """A record as JSON: each field under its export key (fields without one are left out)."""
    cls = type(record)
    data = {
        key: getattr(record, name) if encode is None else encode(getattr(record, name))
        for key, name, encode in _writers(cls)
    }
    return drop_sparse(cls, data)


def json_writers(cls: type) -> tuple[tuple[str, str, Callable[[Any], Any] | None], ...]:
    """(export key, field name, how the value becomes JSON or None when it is JSON as it is)
    of each exported field of `cls`, in the order `record_json` writes them."""
    return _writers(cls)


def drop_sparse(cls: type, data: dict[str, Any]) -> dict[str, Any]:
    """`data` (a `cls` record as JSON) without the fields exported only when they differ
    from their default and do not."""
    for key, default in _sparse(cls):
        if data[key] == default:
            del data[key]
    return data


def record_from_json(cls: type[R], data: Mapping[str, Any], **others: Any) -> R:
    """The record a `record_json` object holds; a missing optional key reads as its default.

    `others` are the fields an export keeps outside the object (a sample's run id)."""
    readers, required = _readers(cls)
    if type(data) is not dict and not isinstance(data, Mapping):
        raise TypeError(f"expected a JSON object, not {type(data).__name__}")
    if not required <= data.keys():
        raise KeyError(next(key for key, _, _ in readers if key in required and key not in data))
    values = {
        name: data[key] if decode is None else decode(data[key])
        for key, name, decode in readers
        if key in data
    }
    return cls(**values, **others)


_Writer = tuple[str, str, Callable[[Any], Any] | None]
#: (key, field name, decoder or None when the JSON value is the field's value as it is).
_Reader = tuple[str, str, Callable[[Any], Any] | None]
_WRITERS: dict[type, tuple[_Writer, ...]] = {}
_READERS: dict[type, tuple[tuple[_Reader, ...], frozenset[str]]] = {}
_SPARSE: dict[type, tuple[tuple[str, Any], ...]] = {}
#: Kinds whose values are JSON as they are.
_AS_IS = (FieldKind.PLAIN, FieldKind.BOOL)


def _writers(cls: type) -> tuple[_Writer, ...]:
    """(key, field name, encoder or None when the value is JSON as it is) per exported field."""
    found = _WRITERS.get(cls)
    if found is None:
        found = _WRITERS[cls] = tuple(
            (f.key, f.name, None if f.kind in _AS_IS else _TO_JSON[f.kind])
            for f in record_fields(cls)
            if f.key is not None
        )
    return found


def _sparse(cls: type) -> tuple[tuple[str, Any], ...]:
    """(key, default) of each field exported only when it differs from its default."""
    found = _SPARSE.get(cls)
    if found is None:
        found = _SPARSE[cls] = tuple(
            (str(f.key), f.default if f.kind in _AS_IS else _TO_JSON[f.kind](f.default))
            for f in record_fields(cls)
            if f.sparse and f.key
        )
    return found


def _readers(cls: type) -> tuple[tuple[_Reader, ...], frozenset[str]]:
    """The readers of each exported field, and the keys an object must have.

    Read once per sample of an import of any size: each decoder is the one call its
    kind needs, and a value that is JSON as it is has none."""
    found = _READERS.get(cls)
    if found is None:
        fields = [f for f in record_fields(cls) if f.key is not None]
        found = _READERS[cls] = (
            tuple((str(f.key), f.name, json_decoder(f)) for f in fields),
            frozenset(str(f.key) for f in fields if f.required),
        )
    return found


def json_decoder(f: RecordField) -> Callable[[Any], Any] | None:
    """How a field's JSON value (present, maybe null) is read: None when it is the value."""
    if f.kind is FieldKind.RECORDS:
        nested = f.type
        return lambda v: tuple(record_from_json(nested, item) for item in v)
    if f.exact:
        return functools.partial(_exact_text, str(f.key))
    if f.kind is FieldKind.PLAIN and f.optional:
        return None
    typed = _typed(f)
    if f.optional:
        return lambda v: None if v is None else typed(v)
    return typed


def _typed(f: RecordField) -> Callable[[Any], Any]:
    """A present, non-null value as the field's type."""
    if f.kind is FieldKind.ENUM:
        return enum_reader(f.type)
    if f.kind is FieldKind.PLAIN:
        return f.type
    return functools.partial(_FROM_JSON[f.kind], f.type)


def enum_reader(enum: type) -> Callable[[Any], Any]:
    """The member of `enum` a value names, as `enum(value)` reads it, by a dict lookup
    (an import or an export reads several per sample)."""
    members = {member.value: member for member in cast(type[Enum], enum)}
    return functools.partial(_member, enum, members)


def _member(enum: type, members: dict[Any, Any], value: Any) -> Any:
    """The enum member of a value, by a dict lookup (an import reads one per sample)."""
    try:
        return members[value]
    except (KeyError, TypeError):
        return enum(value)


def _exact_text(key: str, value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{key} must be a string")
    return value


_VERDICTS: dict[Any, Any] = {v.value: v for v in Verdict}
_TO_JSON: dict[FieldKind, Callable[[Any], Any]] = {
    FieldKind.PLAIN: lambda v: v,
    FieldKind.BOOL: lambda v: v,
    FieldKind.ENUM: lambda v: None if v is None else str(v),
    FieldKind.STRINGS: list,
    FieldKind.MAPPING: dict,
    FieldKind.COUNTS: lambda v: {str(k): v.get(k, 0) for k in VERDICT_ORDER},
    FieldKind.RECORDS: lambda v: [record_json(item) for item in v],
}
_FROM_JSON: dict[FieldKind, Callable[[type, Any], Any]] = {
    FieldKind.BOOL: lambda t, v: bool(v),
    FieldKind.STRINGS: lambda t, v: tuple(str(item) for item in v),
    FieldKind.MAPPING: lambda t, v: dict(v),
    FieldKind.COUNTS: lambda t, v: {_member(Verdict, _VERDICTS, k): int(n) for k, n in v.items()},
}
