"""Suite, case and rubric files at one side of a commit, and what their edits change.

Case files are judged by what they enforce (`redline.casemodel`): the effective bar
at each side, read from parsed YAML, never from the text.
"""

from __future__ import annotations

import posixpath
from dataclasses import dataclass, field
from typing import Any

from redline.casemodel import CONVERSATION_KEYS, GENERATION_KEYS, Compare
from redline.casemodel.diff import BarChange, diff_suite_bars
from redline.casemodel.effective import (
    EffectiveCase,
    Issue,
    KeyPath,
    SuiteBar,
    case_id,
    effective_case,
    suite_bar,
)
from redline.casemodel.values import Change, differs, number_change, show
from redline.documents.yamlsource import line_at, load_data, utf8_problem
from redline.gitio import Snapshot, is_binary
from redline.guard._findings import Finding, Kind
from redline.judge.rubric import BAR_KEYS

KINDS = {
    Change.LOOSER: Kind.LOOSENING,
    Change.TIGHTER: Kind.TIGHTENING,
    Change.REVIEW: Kind.REWRITE,
    Change.SAME: Kind.NOTE,
}


@dataclass
class Parsed:
    data: Any
    problem: Finding | None = None
    raw: bytes | None = None


@dataclass
class Side:
    """One side of the comparison with parse caches; `name` is how messages call it."""

    snap: Snapshot
    name: str
    _yaml: dict[str, Parsed] = field(default_factory=dict)
    _cases: dict[tuple[str, str], EffectiveCase] = field(default_factory=dict)
    _suites: dict[str, SuiteBar] = field(default_factory=dict)

    def read(self, path: str) -> bytes | None:
        return self.snap.read(path)

    def yaml(self, path: str) -> Parsed:
        if path not in self._yaml:
            self._yaml[path] = parse_yaml(self.read(path), path, self.name)
        return self._yaml[path]

    def suite(self, suite_path: str | None) -> SuiteBar:
        """The suite's bar for its cases, prompt files read (their `{{var}}`s every case needs)."""
        key = suite_path or ""
        if key not in self._suites:
            data = self.yaml(suite_path).data if suite_path else {}
            self._suites[key] = suite_bar(data, posixpath.dirname(key), self.read)
        return self._suites[key]

    def case(self, path: str, suite_path: str | None) -> EffectiveCase:
        key = (path, suite_path or "")
        if key not in self._cases:
            self._cases[key] = effective_case(
                self.yaml(path).data, path, self.suite(suite_path), self.read
            )
        return self._cases[key]


def parse_yaml(data: bytes | None, path: str, side: str) -> Parsed:
    """One side's YAML file, read as the loader reads it (`redline.documents.yamlsource`)."""
    if data is None:
        return Parsed(None)
    if is_binary(data):
        return Parsed(
            None, Finding(Kind.BROKEN, path, f"{side} side: binary, not YAML", path), data
        )
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line, column, message = utf8_problem(exc)
        detail = f"{side} side: line {line}, column {column}: {message}"
        return Parsed(None, Finding(Kind.BROKEN, path, detail, path, line), data)
    value, problem = load_data(text, path)
    if problem is not None:
        where = f"line {problem.line}, column {problem.column}"
        detail = f"{side} side does not parse: {where}: {problem.message}"
        return Parsed(None, Finding(Kind.BROKEN, path, detail, path, problem.line), data)
    return Parsed(value, None, data)


def line_of(raw: bytes | None, at: KeyPath) -> int:
    """The line where key path `at` is written (its nearest written ancestor), 1-based; 0 if
    unknown. Only called for findings."""
    if raw is None:
        return 0
    try:
        return line_at(raw.decode("utf-8"), at)
    except UnicodeDecodeError:
        return 0


def issue_findings(side: Side, case: EffectiveCase, parsed: Parsed) -> list[Finding]:
    """A case file the loader would refuse, with each reason and its line."""
    return [_issue(side, case.path, f"case {case.id}", issue, parsed) for issue in case.issues]


def _issue(side: Side, path: str, subject: str, issue: Issue, parsed: Parsed) -> Finding:
    detail = f"{side.name} side does not load: {issue.message}"
    return Finding(Kind.BROKEN, subject, detail, path, line_of(parsed.raw, issue.at))


def bar_finding(subject: str, change: BarChange, path: str, raw: bytes | None) -> Finding:
    return Finding(KINDS[change.change], subject, str(change), path, line_of(raw, change.at))


def compare_suite(
    name: str, path: str, old: Any, new: Any, new_raw: bytes | None = None
) -> list[Finding]:
    """Generation settings and what every request sends besides the prompt text (shared
    messages, tools, tool choice, response format): prompt changes; and the bar a suite
    gives its cases."""
    subject = f"suite {name}"
    if not isinstance(old, dict) or not isinstance(new, dict):
        return _not_a_mapping(subject, old, new)
    findings: list[Finding] = []
    for key in (*GENERATION_KEYS, *CONVERSATION_KEYS):
        if differs(old.get(key), new.get(key)):
            detail = f"{key} {show(old.get(key))} → {show(new.get(key))}"
            findings.append(Finding(Kind.PROMPT, subject, detail, path, line_of(new_raw, (key,))))
    for change in diff_suite_bars(suite_bar(old), suite_bar(new)):
        findings.append(bar_finding(subject, change, path, new_raw))
    return findings


def suite_problems(side: Side, path: str, name: str) -> list[Finding]:
    parsed = side.yaml(path)
    if parsed.problem is not None:
        return [parsed.problem]
    return [_issue(side, path, f"suite {name}", i, parsed) for i in suite_bar(parsed.data).issues]


def compare_bars_in(subject: str, old: Any, new: Any) -> list[Finding]:
    """Pass bars (min_kappa, min_score, max_score) anywhere in a rubric."""
    bars_old, bars_new = _bars(old), _bars(new)
    findings = []
    for path in sorted(set(bars_old) | set(bars_new)):
        a, b = bars_old.get(path), bars_new.get(path)
        if not differs(a, b):
            continue
        key = path.rsplit(".", 1)[-1]
        change = number_change(a, b, higher_is_looser=BAR_KEYS[key] is Compare.CEILING)
        detail = f"{path} {show(a)} → {show(b)}"
        if change is Change.REVIEW:
            detail += " (changed, review)"
        findings.append(Finding(KINDS[change], subject, detail))
    return findings


def _bars(data: Any, prefix: str = "") -> dict[str, Any]:
    found: dict[str, Any] = {}
    if isinstance(data, dict):
        for k, v in data.items():
            path = f"{prefix}.{k}" if prefix else str(k)
            if k in BAR_KEYS:
                found[path] = v
            else:
                found.update(_bars(v, path))
    return found


def without_bars(data: Any) -> Any:
    if isinstance(data, dict):
        return {k: without_bars(v) for k, v in data.items() if k not in BAR_KEYS}
    return data


def _not_a_mapping(subject: str, old: Any, new: Any) -> list[Finding]:
    if old is None and new is None:
        return []
    side = "old" if not isinstance(old, dict) else "new"
    return [Finding(Kind.BROKEN, subject, f"{side} side is not a YAML mapping")]


def name_of(data: Any, path: str) -> str:
    """A suite's `name:` or a case's `id:`, else the file (or folder) name."""
    if isinstance(data, dict) and isinstance(data.get("name"), str) and data["name"].strip():
        return str(data["name"])
    return case_id(data, path.rstrip("/"))


def join_path(folder: str, rel: str) -> str:
    joined = posixpath.normpath(posixpath.join(folder, rel)) if folder else posixpath.normpath(rel)
    return "" if joined == "." else joined
