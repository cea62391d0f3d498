"""Case-file edits planned in full before anything is written.

Edits go through a round-trip YAML parser so comments, quoting and key order
survive: a reformatted case file would hide the real change in review.
"""

from __future__ import annotations

import datetime as dt
import difflib
import io
import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.util import load_yaml_guess_indent

from redline.baseline import Baseline, baseline_case, baseline_path, load_baseline
from redline.errors import UsageError
from redline.outcome import scale_required
from redline.records import CaseRecord, RunRecord, RunStatus, SampleRecord
from redline_tui.widgets.sample_text import diff_line_kind

#: Keys of an assertion that are not its threshold or value.
_NON_VALUE_KEYS = ("type", "note")


@dataclass(frozen=True)
class FileEdit:
    """A planned change: new texts per path, paths to delete, the commit message to use."""

    title: str
    commit_message: str
    writes: Mapping[Path, str]
    before: Mapping[Path, str]
    removes: tuple[Path, ...] = ()
    summary: str = ""

    @property
    def paths(self) -> tuple[Path, ...]:
        return (*self.writes, *self.removes)

    def diff(self, root: Path) -> tuple[list[str], list[str]]:
        """The unified diff of every touched file, with a kind per line for colouring."""
        lines: list[str] = []
        for path in self.paths:
            rel = _rel(path, root)
            old = self.before.get(path, "")
            new = self.writes.get(path, "")
            old_name = f"a/{rel}" if path in self.before else "/dev/null"
            new_name = f"b/{rel}" if path in self.writes else "/dev/null"
            lines.extend(
                difflib.unified_diff(
                    old.splitlines(), new.splitlines(), old_name, new_name, lineterm=""
                )
            )
        return lines, [diff_line_kind(line) for line in lines]

    def apply(self) -> None:
        for path, text in self.writes.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
        for path in self.removes:
            path.unlink()


def plan_raise_samples(case_path: Path, case_id: str, new_samples: int) -> FileEdit:
    """Raise `samples`; an explicit `required` is scaled so the pass-rate bar stays the same."""
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    old_samples = data.get("samples")
    if isinstance(old_samples, int) and new_samples <= old_samples:
        raise UsageError(f"{case_path}: samples is already {old_samples}; raise it above that")
    if new_samples < 1:
        raise UsageError("samples must be at least 1")
    if "samples" in data:
        data["samples"] = new_samples
    else:
        data.insert(
            _insert_position(data, ("tier", "vars", "provenance", "id")), "samples", new_samples
        )
    change = f"samples {old_samples if old_samples is not None else 'default'} → {new_samples}"
    old_required = data.get("required")
    if isinstance(old_required, int) and isinstance(old_samples, int):
        new_required = scale_required(old_required, old_samples, new_samples)
        data["required"] = new_required
        change += f", required {old_required} → {new_required}"
    return FileEdit(
        title=f"Raise samples of case {case_id}",
        commit_message=f"redline: raise samples of case {case_id} ({change})",
        writes={case_path: _dump(yaml, data)},
        before={case_path: text},
        summary=change,
    )


def plan_retire(
    case_path: Path, suite_dir: Path, case_id: str, reason: str, by: str, day: dt.date
) -> FileEdit:
    """Move the case to the suite's `retired/` folder with `retired: {date, reason, by}`."""
    if not reason.strip():
        raise UsageError("retiring a case needs a reason")
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    record = CommentedMap()
    record["date"] = day
    record["reason"] = reason.strip()
    record["by"] = by
    data["retired"] = record
    target = suite_dir / "retired" / case_path.name
    if target.exists():
        raise UsageError(f"{target} already exists; a retired case of that name is there")
    return FileEdit(
        title=f"Retire case {case_id}",
        commit_message=f"redline: retire case {case_id}: {reason.strip()}",
        writes={target: _dump(yaml, data)},
        before={case_path: text},
        removes=(case_path,),
        summary=f"moved to {target.parent.name}/{target.name}",
    )


def assertion_value_key(assertion: Mapping[str, Any]) -> str:
    """The key holding an assertion's value or threshold (`value` unless it has none)."""
    if "value" in assertion:
        return "value"
    for key in assertion:
        if key not in _NON_VALUE_KEYS:
            return str(key)
    raise UsageError(f"assertion {assertion.get('type')!r} has no value to loosen")


def case_assertions(case_path: Path) -> list[Mapping[str, Any]]:
    _, data = _load(case_path.read_text(encoding="utf-8"), case_path)
    items = data.get("assert") or []
    return [a for a in items if isinstance(a, Mapping)]


def plan_loosen(
    case_path: Path, case_id: str, index: int, new_value: str, reason: str, day: dt.date
) -> FileEdit:
    """Change one assertion's value; the reason goes in its `note:` beside the new value."""
    if not reason.strip():
        raise UsageError("loosening an assertion needs a reason")
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    items = data.get("assert")
    if not isinstance(items, CommentedSeq) or not 0 <= index < len(items):
        raise UsageError(f"{case_path}: there is no assert[{index}]")
    assertion = items[index]
    if not isinstance(assertion, CommentedMap):
        raise UsageError(f"{case_path}: assert[{index}] is not a mapping")
    key = assertion_value_key(assertion)
    old = assertion[key]
    parsed = YAML(typ="safe").load(new_value) if new_value.strip() else ""
    if parsed == old:
        raise UsageError(f"assert[{index}] {key} is already {old!r}")
    assertion[key] = parsed
    note = (
        f"loosened {day.isoformat()} ({key} {_scalar(old)} → {_scalar(parsed)}): {reason.strip()}"
    )
    earlier = assertion.get("note")
    assertion["note"] = f"{earlier} | {note}" if earlier else note
    kind = assertion.get("type", "?")
    change = f"assert[{index}] {kind} {_scalar(old)} → {_scalar(parsed)}"
    return FileEdit(
        title=f"Loosen one assertion of case {case_id}",
        commit_message=f"redline: loosen case {case_id} {change}: {reason.strip()}",
        writes={case_path: _dump(yaml, data)},
        before={case_path: text},
        summary=change,
    )


def plan_accept_baseline(
    directory: Path, run: RunRecord, case: CaseRecord, samples: Sequence[SampleRecord]
) -> FileEdit:
    """Replace one case's entry in `baselines/<suite>.json` with this run's result."""
    if run.status is not RunStatus.FINISHED:
        raise UsageError(f"run {run.id} is {run.status}: only a finished run can be accepted")
    path = baseline_path(directory, case.suite)
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    existing = load_baseline(directory, case.suite)
    entries = dict(existing.cases) if existing is not None else {}
    previous = entries.get(case.case_id)
    entries[case.case_id] = baseline_case(case, samples)
    text = Baseline(suite=case.suite, cases=dict(sorted(entries.items()))).to_json()
    was = f"{previous.passes}/{previous.samples}" if previous is not None else "none"
    change = f"{was} → {case.passes}/{case.samples} from {run.kind.value} {run.id}"
    return FileEdit(
        title=f"Accept a new baseline for case {case.case_id}",
        commit_message=f"redline: accept baseline for case {case.case_id} ({change})",
        writes={path: text},
        before={} if before is None else {path: before},
        summary=change,
    )


def _load(text: str, path: Path) -> tuple[YAML, CommentedMap]:
    yaml = YAML(typ="rt")
    yaml.preserve_quotes = True
    yaml.width = 4096
    try:
        _, sequence_indent, dash_offset = load_yaml_guess_indent(text)
        data = yaml.load(text)
    except Exception as exc:
        raise UsageError(f"{path}: cannot parse the case file: {exc}") from exc
    if not isinstance(data, CommentedMap):
        raise UsageError(f"{path}: a case file must be a mapping")
    yaml.indent(
        mapping=_mapping_indent(text),
        sequence=sequence_indent or 2,
        offset=dash_offset or 0,
    )
    return yaml, data


def _mapping_indent(text: str) -> int:
    """The indent step of nested mappings, as the file's author wrote it (default 2)."""
    lines = [
        line for line in text.splitlines() if line.strip() and not line.lstrip().startswith("#")
    ]
    for line, following in itertools.pairwise(lines):
        if not line.rstrip().endswith(":") or line.lstrip().startswith("-"):
            continue
        outer = len(line) - len(line.lstrip())
        inner = len(following) - len(following.lstrip())
        if inner > outer and not following.lstrip().startswith("-"):
            return inner - outer
    return 2


def _dump(yaml: YAML, data: CommentedMap) -> str:
    out = io.StringIO()
    yaml.dump(data, out)
    return out.getvalue()


def _insert_position(data: CommentedMap, after: tuple[str, ...]) -> int:
    keys = list(data)
    for key in after:
        if key in keys:
            return keys.index(key) + 1
    return len(keys)


def _scalar(value: object) -> str:
    return str(value) if not isinstance(value, str) else repr(value)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
