"""Model output is data: make it safe to print on a terminal without it acting on the terminal.

Control characters, ANSI escape sequences, bidi overrides and lone surrogates are shown as
visible escapes (`\\x1b`, `\\x00`, `\\u202e`) instead of being sent to the terminal. Rich
markup is never interpreted: pair this with `rich.text.Text`, never a markup string.
"""

from __future__ import annotations

import re

_VISIBLE_NAMES = {"\r": "\\r", "\t": "\\t", "\n": "\\n"}

# C0 and C1 controls, DEL, bidi embedding/override/isolate marks, zero-width and
# line/paragraph separators, BOM, and lone surrogates (which no terminal can print).
_UNSAFE = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)
_UNSAFE_WITH_LAYOUT = re.compile(
    "[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff\ud800-\udfff]"
)


def _visible(match: re.Match[str]) -> str:
    char = match.group()
    named = _VISIBLE_NAMES.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_output(text: str, *, keep_layout: bool = True) -> str:
    """`text` with every character that could act on a terminal shown as a visible escape.

    With `keep_layout` newlines and tabs are kept (multi-line output stays readable);
    without it they are escaped too, for one-line previews.
    """
    pattern = _UNSAFE if keep_layout else _UNSAFE_WITH_LAYOUT
    if pattern.search(text) is None:
        return text
    return pattern.sub(_visible, text)


def preview(text: str, width: int = 60) -> str:
    """A one-line escaped preview of `text`, cut to `width` characters with an ellipsis."""
    line = escape_output(text, keep_layout=False)
    return line if len(line) <= width else line[: max(0, width - 1)] + "…"


def one_line(text: str, limit: int = 40) -> str:
    """`text` with runs of whitespace as one space, cut to `limit` characters with an ellipsis
    (sources, sentences and targets named in assertion reasons)."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
