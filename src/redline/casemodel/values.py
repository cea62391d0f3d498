"""How two values of one parameter compare: does the new one let more outputs pass?"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from enum import StrEnum
from typing import Any


class Change(StrEnum):
    """What an edit does to the set of outputs that pass."""

    SAME = "same"
    TIGHTER = "tighter"  # every output that passes now passed before
    LOOSER = "looser"  # some output that failed before now passes
    REVIEW = "review"  # neither can be shown: a person has to read it


def combine(changes: list[Change]) -> Change:
    """One verdict for several parameters of one assertion: any loosening wins."""
    for kind in (Change.LOOSER, Change.REVIEW, Change.TIGHTER):
        if kind in changes:
            return kind
    return Change.SAME


def is_number(value: Any) -> bool:
    """A YAML/TOML number: an int or a float, never a boolean (`True` is an int in Python)."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def is_whole(value: Any) -> bool:
    """A whole number written as one: an int, never a boolean."""
    return isinstance(value, int) and not isinstance(value, bool)


#: What each kind of value is called in messages ("must be a list, not a string").
KIND_NAMES = {
    "null": "empty (null)",
    "boolean": "a boolean",
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "mapping": "a mapping",
    "list": "a list",
}


def kind_of(value: Any) -> str:
    """The kind of a parsed YAML/TOML value: a key of KIND_NAMES, or the Python type's name."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "mapping"
    if isinstance(value, list | tuple):
        return "list"
    return type(value).__name__


def kind_name(value: Any) -> str:
    """How a user would call the kind of `value`, for error messages ("a list")."""
    kind = kind_of(value)
    return KIND_NAMES.get(kind, f"a {kind}")


def bound_crossed(
    value: float,
    minimum: float | None,
    maximum: float | None,
    exclusive_minimum: bool = False,
    example: str = "",
) -> tuple[str, str] | None:
    """(the bound `value` crosses in words, the nearest allowed value to show), or None
    when it is within its bounds."""
    if maximum is not None and value > maximum:
        return f"at most {maximum:g}", f"{maximum:g}"
    if minimum is not None and exclusive_minimum and value <= minimum:
        return f"greater than {minimum:g}", example
    if minimum is not None and value < minimum:
        return f"at least {minimum:g}", f"{minimum:g}"
    return None


def out_of_bounds(
    key: str,
    value: float,
    minimum: float | None,
    maximum: float | None,
    exclusive_minimum: bool = False,
    example: str = "",
    assign: str = ": ",
) -> tuple[str, str] | None:
    """(the problem, its hint) for a `key` whose value crosses a bound, naming the bound and
    showing the nearest allowed value as `key{assign}value`; None within the bounds."""
    crossed = bound_crossed(value, minimum, maximum, exclusive_minimum, example)
    if crossed is None:
        return None
    bound, nearest = crossed
    hint = f"e.g. {key}{assign}{nearest}" if nearest else ""
    return f"`{key}` must be {bound}, got {value:g}", hint


def did_you_mean(word: str, options: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the closest option, or '' when nothing is close."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def utf8_problem(exc: UnicodeDecodeError) -> tuple[int, int, str]:
    """(line, column, message) of the first byte of `exc.object` that is not UTF-8."""
    data = bytes(exc.object)
    line = data.count(b"\n", 0, exc.start) + 1
    line_start = data.rfind(b"\n", 0, exc.start) + 1
    column = len(data[line_start : exc.start].decode("utf-8", errors="replace")) + 1
    return line, column, f"not UTF-8 text: byte 0x{data[exc.start]:02x} is {exc.reason}"


def differs(a: Any, b: Any) -> bool:
    if is_number(a) and is_number(b):
        return bool(a != b)
    return json.dumps(a, sort_keys=True, default=str) != json.dumps(b, sort_keys=True, default=str)


def number_change(a: Any, b: Any, *, higher_is_looser: bool) -> Change:
    """A bound moved: absent on the new side loosens, absent on the old side tightens."""
    if not differs(a, b):
        return Change.SAME
    if b is None:
        return Change.LOOSER
    if a is None:
        return Change.TIGHTER
    if not is_number(a) or not is_number(b):
        return Change.REVIEW
    looser = b > a if higher_is_looser else b < a
    return Change.LOOSER if looser else Change.TIGHTER


def show(value: Any) -> str:
    """A value as a finding prints it: numbers plain, text quoted and shortened."""
    if value is None:
        return "(none)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if is_number(value):
        return f"{value:g}" if isinstance(value, float) else str(value)
    if isinstance(value, str):
        text = value if len(value) <= 60 else value[:57] + "..."
        return json.dumps(text, ensure_ascii=False)
    text = json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 80 else text[:77] + "..."


# -- required and forbidden text ------------------------------------------


def _fold(text: str) -> str:
    return text.casefold()


def _caseless(text: str) -> bool:
    """Text with no letter that has an upper and a lower case (digits, punctuation, CJK)."""
    return text.isascii() and text.lower() == text.upper()


def requires(strong: str, strong_ignore_case: bool, weak: str, weak_ignore_case: bool) -> bool:
    """Whether every output containing `strong` also contains `weak` (each with its case rule)."""
    if not weak_ignore_case:
        if strong_ignore_case:
            # Only text without cased letters survives a case-blind match unchanged.
            return _caseless(weak) and strong.isascii() and _fold(weak) in _fold(strong)
        return weak in strong
    return _fold(weak) in _fold(strong)


def required_text_change(
    old: str, old_ignore_case: bool, new: str, new_ignore_case: bool
) -> Change:
    """`contains`/`icontains`: a value that contains the old one is stricter."""
    if old == new and old_ignore_case == new_ignore_case:
        return Change.SAME
    forward = requires(new, new_ignore_case, old, old_ignore_case)
    backward = requires(old, old_ignore_case, new, new_ignore_case)
    if forward and backward:
        return Change.SAME
    if forward:
        return Change.TIGHTER
    return Change.LOOSER  # shorter, or other text: outputs the old value refused now pass


def forbidden_text_change(old: str, new: str) -> Change:
    """`not-contains`: a value that is part of the old one forbids more, so it is stricter."""
    if old == new:
        return Change.SAME
    return Change.TIGHTER if new in old else Change.LOOSER


def source_change(old: str, new: str) -> Change:
    """`grounded-in`: more source text supports more claims, so it lets more through."""
    if old == new:
        return Change.SAME
    if old in new:
        return Change.LOOSER
    if new in old:
        return Change.TIGHTER
    return Change.REVIEW


# -- regular expressions --------------------------------------------------

_INLINE_FLAGS = re.compile(r"\(\?[aiLmsux-]")
_WRAPPERS = ("{}", "(?:{})", "({})")


def pattern_change(old: str, old_flags: str, new: str, new_flags: str) -> Change:
    """A regex edit is narrower only when provably so (anchors or text added around the
    same pattern, the ignore-case flag dropped); wider when the reverse; else review."""
    if old == new and set(old_flags) == set(new_flags):
        return Change.SAME
    if old == new:
        dropped, added = set(old_flags) - set(new_flags), set(new_flags) - set(old_flags)
        if added <= {"i"} and not dropped:
            return Change.LOOSER
        if dropped <= {"i"} and not added:
            return Change.TIGHTER
        return Change.REVIEW
    if set(old_flags) != set(new_flags) or "x" in old_flags:
        return Change.REVIEW
    if _narrows(old, new):
        return Change.TIGHTER
    if _narrows(new, old):
        return Change.LOOSER
    return Change.REVIEW


def _narrows(inner: str, outer: str) -> bool:
    """Whether `outer` is `inner` with more required around it, so every match of `outer`
    holds a match of `inner`."""
    if _top_level_branch(outer):
        return False
    for wrapper in _WRAPPERS:
        core = wrapper.format(inner)
        if wrapper == "{}" and _top_level_branch(inner):
            continue
        at = outer.find(core)
        while at >= 0:
            prefix, suffix = outer[:at], outer[at + len(core) :]
            if (
                _standalone(prefix)
                and _standalone(suffix)
                and not suffix.startswith(("*", "+", "?", "{"))
            ):
                return True
            at = outer.find(core, at + 1)
    return False


def _standalone(part: str) -> bool:
    if not part:
        return True
    if _INLINE_FLAGS.search(part) or part.endswith("\\"):
        return False
    try:
        re.compile(part)
    except re.error:
        return False
    return True


def _top_level_branch(pattern: str) -> bool:
    depth = 0
    in_class = False
    escaped = False
    for ch in pattern:
        if escaped:
            escaped = False
        elif ch == "\\":
            escaped = True
        elif in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            return True
    return False
