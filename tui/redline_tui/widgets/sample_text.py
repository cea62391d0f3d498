"""Raw output and its diff to the golden output, escaped line by line for literal display."""

from __future__ import annotations

import difflib
import re

from redline.baseline import GoldenReference, golden_diff
from redline.textsafe import escape_output
from redline_tui.widgets.lazy_text import Spans

_TAB = 4
#: Words, runs of spaces and single punctuation marks: the units a changed line is compared in.
_TOKEN = re.compile(r"\w+|\s+|[^\w\s]")


def safe_lines(text: str) -> list[str]:
    """Lines of raw output with every control character, escape and NUL shown literally."""
    return [line.expandtabs(_TAB) for line in escape_output(text).split("\n")]


def diff_lines(
    golden: GoldenReference, output: str, output_label: str
) -> tuple[list[str], list[str], list[Spans]]:
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
    return lines, kinds, changed_word_spans(lines, kinds)


def diff_line_kind(line: str) -> str:
    """How a unified-diff line is coloured: note, hunk, added, removed or plain."""
    if line.startswith(("+++", "---")):
        return "note"
    if line.startswith("@@"):
        return "hunk"
    if line.startswith("+"):
        return "added"
    if line.startswith("-"):
        return "removed"
    return "plain"


def changed_word_spans(lines: list[str], kinds: list[str]) -> list[Spans]:
    """For each run of removed lines followed by added lines, pair them in order and mark
    the words that differ in each pair; every other line gets no spans."""
    spans: list[Spans] = [()] * len(lines)
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
        for old, new in zip(range(i, removed_end), range(removed_end, added_end), strict=False):
            spans[old], spans[new] = word_changes(lines[old], lines[new])
        i = max(added_end, i + 1)
    return spans


def word_changes(old_line: str, new_line: str) -> tuple[Spans, Spans]:
    """Character spans of the words that differ between two diff lines (after the +/-)."""
    old_tokens = _TOKEN.findall(old_line[1:])
    new_tokens = _TOKEN.findall(new_line[1:])
    matcher = difflib.SequenceMatcher(None, old_tokens, new_tokens, autojunk=False)
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
