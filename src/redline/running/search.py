"""Find text across a run's raw outputs, failure reasons, tool calls and case ids.

A nightly of 200 cases × 100 samples is too much to read case by case: "which samples said
'Here is the JSON'?" is one query. The store keeps an SQLite FTS5 trigram index (built as a
run finishes; an imported run's a part at a time, by the app in the background), so a query
is a substring match in any script, case-insensitive, answered by the index for the samples
it covers and by an SQL scan for the others. Text under three characters (a two-character
Chinese word, say) is too short for trigrams and is scanned for.
"""

from __future__ import annotations

from dataclasses import dataclass

from redline.errors import UsageError
from redline.running.store import RunStore
from redline.vocabulary.verdicts import Verdict

#: Characters of context on each side of a match in a snippet.
CONTEXT = 40


@dataclass(frozen=True)
class SearchHit:
    """One sample that holds the text, with where it was found."""

    suite: str
    case_id: str
    index: int
    verdict: Verdict
    #: "output", "reason", "tool call" or "case id": the first place the text was found.
    found_in: str
    #: The matching line with some context, the match itself at `snippet[start:end]`.
    snippet: str
    start: int
    end: int


def search_run(store: RunStore, run_id: str, text: str, limit: int = 500) -> list[SearchHit]:
    """Every sample of `run_id` (up to `limit`) whose output, reasons, tool calls (name and
    arguments) or case id hold `text`."""
    needle = text.strip()
    if not needle:
        raise UsageError("nothing to search for: give a word or phrase")
    run = store.run(run_id)
    hits = []
    rows = store.search(run.id, needle, limit)
    for suite, case_id, index, verdict, output, reasons, tools in rows:
        places = (
            ("output", output),
            ("reason", reasons),
            ("tool call", tools),
            ("case id", case_id),
        )
        for found_in, haystack in places:
            at = haystack.lower().find(needle.lower())
            if at >= 0:
                snippet, start = _snippet(haystack, at, len(needle))
                hits.append(
                    SearchHit(
                        suite,
                        case_id,
                        index,
                        verdict,
                        found_in,
                        snippet,
                        start,
                        start + len(needle),
                    )
                )
                break
    return hits


def _snippet(text: str, at: int, length: int) -> tuple[str, int]:
    """The match's surroundings on one line, and where the match starts in it."""
    begin = max(text.rfind("\n", 0, at) + 1, at - CONTEXT)
    newline = text.find("\n", at + length)
    end = min(newline if newline >= 0 else len(text), at + length + CONTEXT)
    prefix = "…" if begin > 0 and text[begin - 1] != "\n" else ""
    suffix = "…" if end < len(text) and text[end] != "\n" else ""
    return prefix + text[begin:end] + suffix, len(prefix) + at - begin


__all__ = ["SearchHit", "search_run"]
