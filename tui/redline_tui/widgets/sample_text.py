"""Raw output and its diff to the golden output, escaped line by line for literal display."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from typing import overload

from redline.deciding.baseline import GoldenReference, diff_line_kind, golden_diff
from redline.textsafe import escape_output
from redline_tui.widgets.lazy_text import Spans

_TAB = 4
#: Words, runs of spaces and single punctuation marks: the units a changed line is compared in.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")
#: Word-level comparison is skipped for longer lines: a token loop (the degenerate output
#: redline exists to catch) makes the matcher slow, and line colours still show the change.
_MAX_LINE_CHARS = 4_000


def safe_lines(text: str) -> list[str]:
    """Lines of raw output with every control character, escape and NUL shown literally."""
    return [line.expandtabs(_TAB) for line in escape_output(text).split("\n")]


def diff_lines(
    golden: GoldenReference, output: str, output_label: str
) -> tuple[list[str], list[str], Sequence[Spans]]:
    """The unified diff to the golden output as escaped lines, a colour kind per line and
    the changed words inside each changed line; first, a note saying what the golden is.

    Without a golden output, the reason there is none is shown instead.
    """
    if golden.text is None:
        return [golden.source], ["note"], [()]
    head = [f"Golden: {golden.source}."]
    diff = golden_diff(golden.text, output, output_label=output_label)
    if not diff:
        lines = [*head, "Identical to the golden output."]
        return lines, ["note"] * len(lines), [()] * len(lines)
    lines = [*head, *(line.expandtabs(_TAB) for line in escape_output(diff).split("\n"))]
    kinds = ["note", *(diff_line_kind(line) for line in lines[1:])]
    return lines, kinds, WordSpans(lines, kinds)


class WordSpans(Sequence[Spans]):
    """The changed words of each line of a diff, computed when a line is first drawn.

    Each run of removed lines followed by added lines is paired in order; a pair is compared
    word by word the first time either line is asked for, so a diff of a megabyte opens at
    once and only what is on screen is ever compared. Lines without a partner, and pairs
    longer than `_MAX_LINE_CHARS`, have no spans (their line colour still shows the change).
    """

    def __init__(self, lines: Sequence[str], kinds: Sequence[str]) -> None:
        self._lines = lines
        self._partner: dict[int, tuple[int, int]] = {}
        self._cache: dict[int, Spans] = {}
        i = 0
        while i < len(lines):
            if kinds[i] != "removed":
                i += 1
                continue
            removed_end = i
            while removed_end < len(lines) and kinds[removed_end] == "removed":
                removed_end += 1
            added_end = removed_end
            while added_end < len(lines) and kinds[added_end] == "added":
                added_end += 1
            pairs = zip(range(i, removed_end), range(removed_end, added_end), strict=False)
            for old, new in pairs:
                self._partner[old] = self._partner[new] = (old, new)
            i = max(added_end, i + 1)

    def __len__(self) -> int:
        return len(self._lines)

    @overload
    def __getitem__(self, index: int) -> Spans: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Spans]: ...

    def __getitem__(self, index: int | slice) -> Spans | Sequence[Spans]:
        if isinstance(index, slice):
            return [self[i] for i in range(len(self))[index]]
        if index < 0:
            index += len(self)
        if index not in self._cache:
            pair = self._partner.get(index)
            if pair is None:
                return ()
            old, new = pair
            if len(self._lines[old]) + len(self._lines[new]) > 2 * _MAX_LINE_CHARS:
                self._cache[old] = self._cache[new] = ()
            else:
                self._cache[old], self._cache[new] = word_changes(
                    self._lines[old], self._lines[new]
                )
        return self._cache[index]


def word_changes(old_line: str, new_line: str) -> tuple[Spans, Spans]:
    """Character spans of the words that differ between two diff lines (after the +/-)."""
    old_tokens = _TOKEN.findall(old_line[1:])
    new_tokens = _TOKEN.findall(new_line[1:])
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens)
    old_starts = _offsets(old_tokens)
    new_starts = _offsets(new_tokens)
    old_spans: list[tuple[int, int]] = []
    new_spans: list[tuple[int, int]] = []
    for tag, a1, a2, b1, b2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        if a2 > a1:
            old_spans.append((old_starts[a1], old_starts[a2]))
        if b2 > b1:
            new_spans.append((new_starts[b1], new_starts[b2]))
    return tuple(old_spans), tuple(new_spans)


def _offsets(tokens: list[str]) -> list[int]:
    """Start of each token in its line (after the one-character diff marker), plus the end."""
    starts = [1]
    for token in tokens:
        starts.append(starts[-1] + len(token))
    return starts
