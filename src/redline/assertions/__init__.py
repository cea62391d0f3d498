"""Assertions: parsed from case files, run on every sample, cheap → expensive.

Importing this package registers the built-in Layer 1 types. `load_optional_types`
imports every module that adds further types (semantic, judge); `assertion_type` imports
one when a case first names one of its types.
"""

from __future__ import annotations

from redline.assertions import deterministic, heuristic, numbers, python_expr, refusal, tools
from redline.assertions.base import (
    LAYER_1,
    LAYER_2,
    OPTIONAL_MODULES,
    Assertion,
    Check,
    Sample,
    Spec,
    assertion_type,
    import_optional,
    known_types,
    register,
    registered_types,
)
from redline.assertions.evaluate import (
    SampleEvaluation,
    evaluate_sample,
    evaluation_order,
    settled_failure,
)
from redline.assertions.refusal import REFUSAL_PHRASES, detect_refusal

_BUILTIN_MODULES = (deterministic, heuristic, numbers, python_expr, refusal, tools)


def load_optional_types() -> None:
    """Import every optional assertion module that exists, so its types register."""
    for name in OPTIONAL_MODULES:
        import_optional(name)


__all__ = [
    "LAYER_1",
    "LAYER_2",
    "OPTIONAL_MODULES",
    "REFUSAL_PHRASES",
    "Assertion",
    "Check",
    "Sample",
    "SampleEvaluation",
    "Spec",
    "assertion_type",
    "detect_refusal",
    "evaluate_sample",
    "evaluation_order",
    "known_types",
    "load_optional_types",
    "register",
    "registered_types",
    "settled_failure",
]
