"""Raw output and its diff to the golden output, escaped line by line for literal display."""

from __future__ import annotations

import textwrap

from redline.baseline import golden_diff
from redline.textsafe import escape_output

_TAB = 4


def safe_lines(text: str) -> list[str]:
    """Lines of raw output with every control character, escape and NUL shown literally."""
    return [line.expandtabs(_TAB) for line in escape_output(text).split("\n")]


_NO_BASELINE = "No golden output: no accepted baseline for this case yet (a accepts one)."


def diff_lines(
    golden: str | None, output: str, output_label: str, missing: str = _NO_BASELINE
) -> tuple[list[str], list[str]]:
    """The unified diff to the golden output as escaped lines with a colour kind each.

    Without a golden output, `missing` (why there is none) is shown, wrapped to fit the
    pane at 80 columns.
    """
    if golden is None:
        lines = textwrap.wrap(missing or _NO_BASELINE, 36)
        return lines, ["note"] * len(lines)
    diff = golden_diff(golden, output, output_label=output_label)
    if not diff:
        return ["Identical to the golden output."], ["note"]
    lines = [line.expandtabs(_TAB) for line in escape_output(diff).split("\n")]
    return lines, [diff_line_kind(line) for line in lines]


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
