"""Case-file edits planned in full before anything is written.

Edits go through a round-trip YAML parser so comments, quoting and key order
survive: a reformatted case file would hide the real change in review.
"""

from __future__ import annotations

import copy
import datetime as dt
import difflib
import io
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import yaml as pyyaml
from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.scalarstring import ScalarString
from ruamel.yaml.util import load_yaml_guess_indent

from redline.casemodel import CASE_SUFFIXES, SUITE_FILE
from redline.casemodel.effective import (
    KeyPath,
    SuiteBar,
    default_required,
    effective_case,
    suite_bar,
)
from redline.casemodel.values import kind_of
from redline.config import Config
from redline.deciding.baseline import (
    Baseline,
    BaselineCase,
    baseline_case,
    baseline_path,
    diff_line_kind,
    load_baseline,
)
from redline.errors import RunNotFinished, UsageError
from redline.suite.cases import check_suite_edit
from redline.vocabulary.outcome import scale_required
from redline.vocabulary.records import CaseRecord, RunRecord, RunStatus, SampleRecord
from redline.vocabulary.tiers import Tier

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


def check_edit(edit: FileEdit, config: Config | None) -> None:
    """Load every suite the edit touches as it would be afterwards, with the engine's own
    loader; raise ProblemsError (every problem, with file and line) before anything is written.
    """
    folders = {
        path.parent
        for path in edit.paths
        if path.suffix in CASE_SUFFIXES and (path.parent / SUITE_FILE).is_file()
    }
    for folder in sorted(folders):
        planned: dict[Path, str | None] = {
            path: text for path, text in edit.writes.items() if path.parent == folder
        }
        planned.update({path: None for path in edit.removes if path.parent == folder})
        check_suite_edit(folder, planned, config)


def plan_raise_samples(case_path: Path, case_id: str, new_samples: int) -> FileEdit:
    """Raise `samples` and keep the case's pass-rate bar, as `--samples` does: the required
    count is scaled and written whenever the tier's default would be another bar (a
    quality case's "one may miss" at 246 samples is a 100% bar, not its 80%).
    A sequential case (`samples: {min, max, bar}`) keeps its plan and its bar: its `max`
    is raised."""
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    if new_samples < 1:
        raise UsageError("samples must be at least 1")
    old_samples = data.get("samples")
    if isinstance(old_samples, CommentedMap):
        return _raise_sequential(case_path, case_id, new_samples, text, yaml, data)
    if isinstance(old_samples, int) and new_samples <= old_samples:
        raise UsageError(f"{case_path}: samples is already {old_samples}; raise it above that")
    suite = _suite_of(case_path)
    inherited = suite.samples.value if old_samples is None and suite is not None else None
    if isinstance(inherited, dict):
        return _raise_sequential(case_path, case_id, new_samples, text, yaml, data, inherited)
    bar = raised_bar(case_path, new_samples)
    if bar is None:
        raise UsageError(f"{case_path}: cannot read the case's samples and required count")
    edited: list[KeyPath] = [("samples",)]
    if "samples" in data:
        data["samples"] = new_samples
    else:
        data.insert(
            _insert_position(data, ("tier", "vars", "provenance", "id")), "samples", new_samples
        )
    change = f"samples {old_samples if old_samples is not None else bar.samples} → {new_samples}"
    if "required" in data or bar.new_required != default_required(bar.tier, new_samples):
        if "required" in data:
            data["required"] = bar.new_required
        else:
            data.insert(_insert_position(data, ("samples",)), "required", bar.new_required)
        edited.append(("required",))
    if bar.new_required != bar.required:
        change += f", required {bar.required} → {bar.new_required}"
    return FileEdit(
        title=f"Raise samples of case {case_id}",
        commit_message=f"redline: raise samples of case {case_id} ({change})",
        writes={case_path: _dump(yaml, data, text, edited)},
        before={case_path: text},
        summary=f"{change}; {bar.describe()}",
    )


@dataclass(frozen=True)
class RaisedBar:
    """A fixed-count case's pass bar before and after raising its samples."""

    tier: Tier
    samples: int
    required: int
    new_samples: int
    new_required: int

    def describe(self) -> str:
        """`bar 4/5 (80%) → 16/20 (80%)`: what the case will be held to."""
        return (
            f"bar {self.required}/{self.samples} ({self.required / self.samples:.0%}) → "
            f"{self.new_required}/{self.new_samples} "
            f"({self.new_required / self.new_samples:.0%})"
        )


def raised_bar(case_path: Path, new_samples: int) -> RaisedBar | None:
    """The case's effective bar (its suite's defaults where it says nothing), and the same
    rate at `new_samples`; None for a sequential case (its plan keeps its own bar)."""
    text = case_path.read_text(encoding="utf-8")
    reading = effective_case(_plain(text), case_path.as_posix(), _suite_of(case_path), None)
    if reading.sampling is not None or not isinstance(reading.samples.value, int):
        return None
    samples, required = int(reading.samples.value), int(reading.required.value)
    return RaisedBar(
        Tier(reading.tier.value),
        samples,
        required,
        new_samples,
        scale_required(required, samples, new_samples),
    )


def _raise_sequential(
    case_path: Path,
    case_id: str,
    new_samples: int,
    text: str,
    yaml: YAML,
    data: CommentedMap,
    inherited: Mapping[str, Any] | None = None,
) -> FileEdit:
    """More samples for a sequential case: a higher `samples.max`, the same min and bar
    (a plan the case takes from its suite is written into the case with the new max)."""
    if inherited is not None:
        plan = CommentedMap((k, v) for k, v in inherited.items() if v is not None)
        plan.fa.set_flow_style()
        data.insert(_insert_position(data, ("tier", "vars", "provenance", "id")), "samples", plan)
        old_max = inherited["max"]
    else:
        plan = data["samples"]
        reading = effective_case(_plain(text), case_path.as_posix(), None, None)
        old_max = reading.sampling["max"] if reading.sampling is not None else plan.get("max")
    if isinstance(old_max, int) and new_samples <= old_max:
        raise UsageError(f"{case_path}: samples.max is already {old_max}; raise it above that")
    if "max" in plan:
        plan["max"] = new_samples
    else:
        plan.insert(_insert_position(plan, ("min",)), "max", new_samples)
    change = f"samples.max {old_max} → {new_samples}"
    return FileEdit(
        title=f"Raise samples of case {case_id}",
        commit_message=f"redline: raise samples of case {case_id} ({change})",
        writes={case_path: _dump(yaml, data, text, [("samples",)])},
        before={case_path: text},
        summary=change,
    )


def _suite_of(case_path: Path) -> SuiteBar | None:
    """What the case's suite.yaml gives its cases, None when the case has no suite file."""
    suite_file = case_path.parent / SUITE_FILE
    if not suite_file.is_file():
        return None
    return suite_bar(_plain(suite_file.read_text(encoding="utf-8")))


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
        writes={target: _dump(yaml, data, text, [("retired",)])},
        before={case_path: text},
        removes=(case_path,),
        summary=f"moved to {target.parent.name}/{target.name}",
    )


def plan_quarantine(
    case_path: Path, case_id: str, reason: str, ticket: str, until: dt.date, day: dt.date
) -> FileEdit:
    """`quarantine: {reason, ticket, until}`: the case keeps running but cannot fail a run
    until that date (extending an existing quarantine rewrites it)."""
    if not reason.strip():
        raise UsageError("a quarantine needs a reason (why this case may not fail a run for now)")
    if until < day:
        raise UsageError(f"until {until.isoformat()} has passed already; give a later date")
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    record = CommentedMap()
    record["reason"] = reason.strip()
    if ticket.strip():
        record["ticket"] = ticket.strip()
    record["until"] = until
    old = data.get("quarantine")
    if "quarantine" in data:
        data["quarantine"] = record
    else:
        data.insert(
            _insert_position(data, ("assert", "tier", "vars", "provenance", "id")),
            "quarantine",
            record,
        )
    ticket_note = f" ({ticket.strip()})" if ticket.strip() else ""
    verb = "extend quarantine of" if isinstance(old, CommentedMap) else "quarantine"
    change = f"until {until.isoformat()}{ticket_note}"
    return FileEdit(
        title=f"Quarantine case {case_id}",
        commit_message=f"redline: {verb} case {case_id} {change}: {reason.strip()}",
        writes={case_path: _dump(yaml, data, text, [("quarantine",)])},
        before={case_path: text},
        summary=change,
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


#: What a value typed into the form must be, by the kind of the current value.
_FORM_KINDS = {
    "boolean": "true or false",
    "integer": "a whole number",
    "number": "a number",
    "string": "text (taken literally, whatever characters it holds)",
    "mapping": "a mapping, written as JSON or YAML flow ({key: value})",
    "list": "a list, written as JSON or YAML flow ([a, b])",
}


def value_kind(value: object) -> str:
    """What a value typed into the form must be, in words, judged by the current value."""
    return _FORM_KINDS.get(kind_of(value), "a value like the current one")


def value_as_text(value: object) -> str:
    """The current value as the form shows it: text as it is, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, default=str)


def typed_value(old: object, text: str) -> object:
    """`text` read as the same kind of value as `old`: a string stays a string whatever
    characters it holds (`Here is the JSON:` is never a mapping), numbers are checked.

    Raises UsageError saying what was expected.
    """
    if isinstance(old, bool):
        lowered = text.strip().lower()
        if lowered not in ("true", "false"):
            raise UsageError(f"{text!s} is not true or false")
        return lowered == "true"
    if isinstance(old, int):
        try:
            return int(text.strip())
        except ValueError:
            raise UsageError(f'"{text}" is not a whole number') from None
    if isinstance(old, float):
        try:
            number = float(text.strip())
        except ValueError:
            raise UsageError(f'"{text}" is not a number') from None
        if number != number or number in (float("inf"), float("-inf")):
            raise UsageError(f'"{text}" is not a finite number')
        return number
    if isinstance(old, str):
        if not text:
            raise UsageError("the new text is empty")
        return type(old)(text) if isinstance(old, ScalarString) else text
    if isinstance(old, Mapping | list):
        try:
            parsed = YAML(typ="safe").load(text)
        except Exception as exc:
            raise UsageError(f"cannot read the new value: {exc}") from None
        if isinstance(old, Mapping) != isinstance(parsed, Mapping) or isinstance(
            old, list
        ) != isinstance(parsed, list):
            raise UsageError(f"the new value must be {value_kind(old)}")
        return parsed
    raise UsageError(f"the current value {in_words(old)} cannot be edited here")


def in_words(value: object) -> str:
    """A value as a commit message or note shows it: text in double quotes, else JSON."""
    return json.dumps(
        value if not isinstance(value, ScalarString) else str(value),
        ensure_ascii=False,
        default=str,
    )


def plan_loosen(
    case_path: Path, case_id: str, index: int, new_value: str, reason: str, day: dt.date
) -> FileEdit:
    """Change one assertion's value; the reason goes in its `note:` beside the new value.

    The new value is read as the same kind as the current one (see `typed_value`).
    """
    if not reason.strip():
        raise UsageError("loosening an assertion needs a reason")
    text = case_path.read_text(encoding="utf-8")
    yaml, data = _load(text, case_path)
    items = data.get("assert")
    if not isinstance(items, CommentedSeq) or not 0 <= index < len(items):
        raise UsageError(f"{case_path}: there is no assertion number {index}")
    assertion = items[index]
    if not isinstance(assertion, CommentedMap):
        raise UsageError(f"{case_path}: assertion number {index} is not a mapping")
    key = assertion_value_key(assertion)
    old = assertion[key]
    parsed = typed_value(old, new_value)
    if parsed == old:
        raise UsageError(f"assertion {index}'s {key} is already {in_words(old)}")
    assertion[key] = parsed
    note = (
        f"loosened {day.isoformat()} ({key} {in_words(old)} → {in_words(parsed)}): {reason.strip()}"
    )
    earlier = assertion.get("note")
    assertion["note"] = f"{earlier} | {note}" if earlier else note
    kind = assertion.get("type", "?")
    change = f"assertion {index} ({kind}) {key} {in_words(old)} → {in_words(parsed)}"
    return FileEdit(
        title=f"Loosen one assertion of case {case_id}",
        commit_message=f"redline: loosen case {case_id} {change}: {reason.strip()}",
        writes={
            case_path: _dump(yaml, data, text, [("assert", index, key), ("assert", index, "note")])
        },
        before={case_path: text},
        summary=change,
    )


def accepted_entry(directory: Path, suite: str, case_id: str) -> BaselineCase | None:
    existing = load_baseline(directory, suite)
    return None if existing is None else existing.cases.get(case_id)


def baseline_warnings(
    previous: BaselineCase | None, case: CaseRecord, pinned_model: str | None
) -> list[str]:
    """Why accepting `case` as the new baseline needs a reason, in numbers; empty when not.

    A lower pass rate than the accepted one lowers the bar every later run is held to; a
    run on another model than the suite's pinned one is not evidence about that model.
    """
    warnings: list[str] = []
    if previous is not None and previous.samples and case.samples:
        old_rate = previous.passes / previous.samples
        new_rate = case.passes / case.samples
        if new_rate < old_rate:
            warnings.append(
                f"It lowers the accepted pass count: {previous.passes}/{previous.samples} "
                f"({old_rate:.0%}) → {case.passes}/{case.samples} ({new_rate:.0%})."
            )
    if pinned_model is not None and not _same_model(case.model_id, pinned_model):
        warnings.append(
            f"It comes from model {case.model_id}, not the suite's pinned model {pinned_model}."
        )
    return warnings


def _same_model(run_model: str, pinned: str) -> bool:
    """A run's model identity may add the weights' digest to the pinned id (`id@sha256:…`)."""
    return run_model == pinned or run_model.startswith(pinned + "@")


def plan_accept_baseline(
    directory: Path,
    run: RunRecord,
    case: CaseRecord,
    samples: Sequence[SampleRecord],
    reason: str = "",
) -> FileEdit:
    """Replace one case's entry in `baselines/<suite>.json` with this run's result; a
    reason (required by the caller when `baseline_warnings` found any) is kept in it."""
    if run.status is not RunStatus.FINISHED:
        raise RunNotFinished(
            f"run {run.id} is {run.status}: only a finished run can be accepted "
            f"(finish it with `redline run --resume {run.id}`)"
        )
    path = baseline_path(directory, case.suite)
    before = path.read_text(encoding="utf-8") if path.is_file() else None
    existing = load_baseline(directory, case.suite)
    entries = dict(existing.cases) if existing is not None else {}
    previous = entries.get(case.case_id)
    entries[case.case_id] = replace(baseline_case(case, samples), reason=reason.strip())
    text = Baseline(suite=case.suite, cases=dict(sorted(entries.items()))).to_json()
    was = f"{previous.passes}/{previous.samples}" if previous is not None else "none"
    change = f"{was} → {case.passes}/{case.samples} from {run.kind.value} {run.id}"
    message = f"redline: accept baseline for case {case.case_id} ({change})"
    if reason.strip():
        message += f": {reason.strip()}"
    return FileEdit(
        title=f"Accept a new baseline for case {case.case_id}",
        commit_message=message,
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


def _dump(yaml: YAML, data: CommentedMap, before: str, edited: Sequence[KeyPath]) -> str:
    """The edited document as text: the round-trip dump where it says something new (the
    `edited` key paths), the author's own bytes everywhere else. The result is read back;
    when it does not say what the edit meant, the plain dump is used instead."""
    out = io.StringIO()
    yaml.dump(data, out)
    dumped = out.getvalue()
    edited_lines = {line for path in edited for line in _span(dumped, path)}
    old_lines, new_lines = before.splitlines(keepends=True), dumped.splitlines(keepends=True)
    kept: list[str] = []
    matcher = difflib.SequenceMatcher(None, old_lines, new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            kept.extend(new_lines[j1:j2])
            continue
        paired = min(i2 - i1, j2 - j1)
        for k in range(paired):
            kept.append(new_lines[j1 + k] if j1 + k in edited_lines else old_lines[i1 + k])
        kept.extend(
            line for j, line in enumerate(new_lines) if j1 + paired <= j < j2 and j in edited_lines
        )
        if j1 + paired not in edited_lines and j1 + paired - 1 not in edited_lines:
            kept.extend(old_lines[i1 + paired : i2])
    spliced = "".join(kept)
    intended = _with_edits(_plain(before), _plain(dumped), edited)
    if _plain(spliced) == intended:
        return spliced
    if _plain(dumped) == intended:
        return dumped
    raise UsageError(
        "cannot write this change without rewriting other lines of the case file; "
        "make it by hand (the keys: " + ", ".join(".".join(map(str, p)) for p in edited) + ")"
    )


def _with_edits(before: Any, after: Any, edited: Sequence[KeyPath]) -> Any:
    """What the edit means: the file as it was, with only the `edited` key paths taken from
    `after` (a round-trip dump may also reword a block scalar; that is not the edit)."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return after
    meant = copy.deepcopy(before)
    for path in edited:
        source: Any = after
        target: Any = meant
        for step in path[:-1]:
            source, target = source[step], target[step]
        last = path[-1]
        if isinstance(source, dict) and last not in source:
            target.pop(last, None)
        else:
            target[last] = source[last]
    return meant


def _plain(text: str) -> Any:
    try:
        return YAML(typ="safe").load(text)
    except Exception:
        return None


def _span(text: str, path: KeyPath) -> range:
    """The lines (0-based) where the value at key path `path` is written, with its key."""
    node: Any = pyyaml.compose(text, Loader=pyyaml.SafeLoader)
    start = 0
    for step in path:
        child = None
        if isinstance(node, pyyaml.MappingNode):
            for key, value in node.value:
                if key.value == step:
                    start, child = key.start_mark.line, value
                    break
        elif (
            isinstance(node, pyyaml.SequenceNode)
            and isinstance(step, int)
            and 0 <= step < len(node.value)
        ):
            child = node.value[step]
            start = child.start_mark.line
        if child is None:
            return range(0)
        node = child
    end = node.end_mark.line + (1 if node.end_mark.column > 0 else 0)
    return range(start, max(end, start + 1))


def _insert_position(data: CommentedMap, after: tuple[str, ...]) -> int:
    keys = list(data)
    for key in after:
        if key in keys:
            return keys.index(key) + 1
    return len(keys)


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()
