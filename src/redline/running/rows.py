"""Records as rows of the store's tables, derived from the record definitions.

Each record field is one column named after it (a verdict count is one `n_<verdict>`
column per verdict); `Table.add_missing_columns` gives an existing store the columns of
fields added since it was made, so an older store opens and its rows read back with the
new fields at their defaults.
"""

from __future__ import annotations

import json
import operator
import sqlite3
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from redline.running.recordjson import (
    drop_sparse,
    enum_reader,
    json_decoder,
    json_writers,
    record_from_json,
    record_json,
)
from redline.vocabulary.records import FieldKind, RecordField, record_fields
from redline.vocabulary.verdicts import VERDICT_ORDER

R = TypeVar("R")

#: Field names SQL reserves, and the column each is stored in.
_RESERVED = {"index": "idx"}

_SQL_TYPES = {bool: "INTEGER", int: "INTEGER", float: "REAL"}


def encode_text(text: str) -> str | bytes:
    """Text as SQLite can keep it exactly: lone surrogates (valid in JSON) go in as a BLOB."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def decode_text(value: str | bytes) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", "surrogatepass")
    return value


@dataclass(frozen=True)
class _Column:
    field: RecordField
    names: tuple[str, ...]
    #: The stored value of a non-None value (the values, for several columns); None: as it is.
    encode: Callable[[Any], Any] | None
    #: Reads the value from its column (or columns); None: the stored value as it is.
    decode: Callable[[Any], Any] | None


class Table(Generic[R]):
    """One record class as rows of one table: its column names and how values are kept."""

    def __init__(self, record: type[R], name: str) -> None:
        self.record = record
        self.name = name
        self._columns = tuple(_column(f) for f in record_fields(record) if f.column is not None)
        self.names: tuple[str, ...] = tuple(n for c in self._columns for n in c.names)
        readers: list[tuple[str, int | slice, Callable[[Any], Any] | None]] = []
        at = 0
        for c in self._columns:
            width = len(c.names)
            where = at if width == 1 else slice(at, at + width)
            readers.append((c.field.name, where, c.decode))
            at += width
        self._readers = tuple(readers)
        # Writing a row (one per sample and one per assertion result): every field's value
        # in one call, then only the values that need it encoded, last column first so a
        # field spread over several columns does not move the ones before it.
        fields = [c.field.name for c in self._columns]
        get = operator.attrgetter(*fields)
        self._values: Callable[[Any], Any] = get if len(fields) > 1 else lambda r: (get(r),)
        self._encoders = tuple(
            (i, c.encode, len(c.names) > 1)
            for i, c in reversed(tuple(enumerate(self._columns)))
            if c.encode is not None
        )
        self._from_json = tuple(_from_json(c) for c in self._columns)
        self._spread = any(len(c.names) > 1 for c in self._columns)
        # Reading a row as its record's JSON (an export writes one per sample and one per
        # assertion result): (key, column position or None for a field given outside the
        # row, field name, column decoder, JSON encoder), in `record_json`'s key order.
        columns = {name: (where, decode) for name, where, decode in readers}
        self._to_json = tuple(
            (key, *columns.get(name, (None, None)), name, encode)
            for key, name, encode in json_writers(record)
        )

    def select(self, alias: str = "") -> str:
        """The column list for a SELECT, each prefixed with `alias.` when given."""
        prefix = f"{alias}." if alias else ""
        return ", ".join(prefix + n for n in self.names)

    def insert(self, verb: str = "INSERT") -> str:
        marks = ", ".join("?" * len(self.names))
        return f"{verb} INTO {self.name} ({', '.join(self.names)}) VALUES ({marks})"

    def row(self, record: R) -> list[Any]:
        out = list(self._values(record))
        for i, encode, spread in self._encoders:
            value = out[i]
            if spread:
                out[i : i + 1] = encode(value)
            elif value is not None:
                out[i] = encode(value)
        return out

    def json_row(self, data: Mapping[str, Any], **others: Any) -> list[Any]:
        """The row of the record `record_from_json(record, data, **others)` reads, without
        building it (an import writes half a million): each value is checked as that
        reading checks it, then stored as `row` stores it."""
        if type(data) is not dict and not isinstance(data, Mapping):
            raise TypeError(f"expected a JSON object, not {type(data).__name__}")
        get = data.get
        values = [
            (value if convert is None else convert(value))
            if (value := get(key, _ABSENT)) is not _ABSENT
            else _absent(key, name, convert, absent, others)
            for key, name, convert, absent, _ in self._from_json
        ]
        if not self._spread:
            return values
        out: list[Any] = []
        for value, (*_, spread) in zip(values, self._from_json, strict=True):
            if spread:
                out.extend(value)
            else:
                out.append(value)
        return out

    def read(self, row: Sequence[Any], **others: Any) -> R:
        """The record of a row selected with `select()`; `others` are its non-column fields."""
        values = {
            name: row[where] if decode is None else decode(row[where])
            for name, where, decode in self._readers
        }
        return self.record(**values, **others)

    def read_json(self, row: Sequence[Any], **others: Any) -> dict[str, Any]:
        """`record_json(self.read(row, ...))` without building the record (an export writes
        one per sample): each column read as `read` reads it, then written as `record_json`
        writes it. `others` are the exported non-column fields, already as JSON."""
        data = {}
        for key, where, decode, name, encode in self._to_json:
            if where is None:
                data[key] = others[name]
                continue
            value = row[where] if decode is None else decode(row[where])
            data[key] = value if encode is None else encode(value)
        return drop_sparse(self.record, data)

    def add_missing_columns(self, db: sqlite3.Connection) -> None:
        """Add the columns of fields newer than the store: nullable, read back as defaults."""
        have = {r[1] for r in db.execute(f"PRAGMA table_info({self.name})")}
        for c in self._columns:
            for n in c.names:
                if n not in have:
                    sql_type = _SQL_TYPES.get(c.field.type, "TEXT")
                    db.execute(f"ALTER TABLE {self.name} ADD COLUMN {n} {sql_type}")


#: A JSON key every object must have.
_REQUIRED = object()
#: A key the object does not have.
_ABSENT = object()
#: The key of a field kept outside the object (a sample's run id): never a JSON key.
_OUTSIDE = object()


def _absent(
    key: Any,
    name: str,
    convert: Callable[[Any], Any] | None,
    absent: Any,
    others: Mapping[str, Any],
) -> Any:
    """The value of a column whose key the JSON object lacks: given outside the object
    (no key), an error (a required key), or the field's default."""
    if key is _OUTSIDE:
        value = others[name]
        return value if convert is None else convert(value)
    if absent is _REQUIRED:
        raise KeyError(key)
    return absent


def _from_json(c: _Column) -> tuple[Any, str, Callable[[Any], Any] | None, Any, bool]:
    """(JSON key, or `_OUTSIDE` when the value comes from outside the object, field name, how a
    value becomes the column value(s), the column value when the key is absent, whether
    the value spreads over several columns)."""
    f = c.field
    spread = len(c.names) > 1
    encode = c.encode
    decode = json_decoder(f) if f.key is not None else None
    if f.required:
        absent: Any = _REQUIRED
    elif spread or (encode is not None and f.default is not None):
        absent = encode(f.default) if encode is not None else f.default
    else:
        absent = f.default
    convert: Callable[[Any], Any] | None
    if encode is None:
        convert = decode
    elif decode is None:
        convert = encode if spread else (lambda v: None if v is None else encode(v))
    else:

        def convert(value: Any) -> Any:
            decoded = decode(value)
            return decoded if decoded is None and not spread else encode(decoded)

    return _OUTSIDE if f.key is None else f.key, f.name, convert, absent, spread


def _column(f: RecordField) -> _Column:
    assert f.column is not None
    name = _RESERVED.get(f.column, f.column)
    if f.kind is FieldKind.COUNTS:
        return _Column(
            f,
            tuple(f"n_{v}" for v in VERDICT_ORDER),
            lambda counts: [int(counts.get(v, 0)) for v in VERDICT_ORDER],
            lambda ns: {v: int(n or 0) for v, n in zip(VERDICT_ORDER, ns, strict=True)},
        )
    encode, decode = _CODECS[f.kind](f)
    absent = None if f.optional or f.required else f.default
    write = None if encode is _same else encode
    if decode is _same and absent is None:
        return _Column(f, (name,), write, None)

    def read(value: Any) -> Any:
        return absent if value is None else decode(value)

    return _Column(f, (name,), write, read)


def _plain(f: RecordField) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    if f.exact:
        return encode_text, decode_text
    return _same, _same


def _same(value: Any) -> Any:
    return value


def _records(f: RecordField) -> tuple[Callable[[Any], Any], Callable[[Any], Any]]:
    """Nested records (tool calls, loop steps) as one JSON array; text escaped to ASCII so
    a lone surrogate in a raw output survives."""
    nested = f.type

    def encode(value: Any) -> str | None:
        if not value:
            return None
        return json.dumps([record_json(item) for item in value], ensure_ascii=True)

    def decode(value: Any) -> Any:
        return tuple(record_from_json(nested, item) for item in json.loads(value))

    return encode, decode


_Codec = tuple[Callable[[Any], Any], Callable[[Any], Any]]
_CODECS: dict[FieldKind, Callable[[RecordField], _Codec]] = {
    FieldKind.PLAIN: _plain,
    FieldKind.BOOL: lambda f: (int, bool),
    FieldKind.ENUM: lambda f: (str, enum_reader(f.type)),
    FieldKind.STRINGS: lambda f: (lambda v: json.dumps(list(v)), lambda v: tuple(json.loads(v))),
    FieldKind.MAPPING: lambda f: (
        lambda v: json.dumps(dict(v), sort_keys=True, default=str),
        json.loads,
    ),
    FieldKind.RECORDS: _records,
}
