"""A JSON Schema an output or a call's arguments are checked against.

jsonschema checks the schema itself when a case loads (its meta-schema errors name the
keyword at fault); values are checked by jsonschema-rs, a compiled validator: well under a
microsecond for a tool's arguments, where the pure-Python validator takes tens, which would
make the schema checks the most expensive part of Layer 1. Both follow the schema's draft.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any, Protocol

from redline.casemodel.schema import schema_problem


class _Error(Protocol):
    @property
    def message(self) -> str: ...
    @property
    def instance_path(self) -> Iterable[object]: ...


class _Validator(Protocol):
    def is_valid(self, instance: Any) -> bool: ...
    def iter_errors(self, instance: Any) -> Iterable[Any]: ...


class JsonSchema:
    """A checked JSON Schema: `problem(value)` says where and why a value does not match."""

    def __init__(self, schema: Mapping[str, Any], fallback: _Validator) -> None:
        import jsonschema_rs

        self.schema = schema
        self._validator: _Validator = fallback
        self._compiled = False
        try:
            self._validator = jsonschema_rs.validator_for(dict(schema))
            self._compiled = True
        except (ValueError, jsonschema_rs.ValidationError, jsonschema_rs.ReferencingError):
            pass  # a schema only the pure-Python validator reads: it checks the values too

    @classmethod
    def checked(cls, schema: Mapping[str, Any]) -> tuple[JsonSchema | None, str]:
        """(the schema, "") or (None, why it is no JSON Schema, and which draft said so).

        Many cases of a suite name one schema file: it is checked and compiled once per
        content (validators are read-only, so the cases share it)."""
        try:
            key = json.dumps(schema, allow_nan=False)
        except (TypeError, ValueError):
            return cls._check(schema)
        known = _CHECKED.get(key)
        if known is None:
            if len(_CHECKED) >= _CHECKED_MAX:
                _CHECKED.clear()
            known = _CHECKED[key] = cls._check(schema)
        return known

    @classmethod
    def _check(cls, schema: Mapping[str, Any]) -> tuple[JsonSchema | None, str]:
        from jsonschema.validators import validator_for

        problem = schema_problem(dict(schema))
        if problem is not None:
            return None, problem
        return cls(schema, validator_for(schema)(schema)), ""

    def problem(self, value: Any) -> str | None:
        """Where and why `value` does not match (its first error), or None when it does."""
        if self._validator.is_valid(value):
            return None
        error = next(iter(self._validator.iter_errors(value)), None)
        if error is None:
            return "at (root): does not match the schema"
        path = error.instance_path if self._compiled else error.absolute_path
        where = "/".join(str(p) for p in path) or "(root)"
        return f"at {where}: {error.message}"


#: Schemas checked so far, by their JSON text (key order kept: it orders the errors).
_CHECKED: dict[str, tuple[JsonSchema | None, str]] = {}
_CHECKED_MAX = 256


__all__ = ["JsonSchema"]
