"""The four case actions: ask, show the exact change, write, stage that change alone.

Nothing is committed: the user commits the staged change with the message shown, as
its own reviewable commit. A loosening (as the guard sees it) is refused while the
index holds a prompt change (never loosen a threshold in the commit of a prompt change).
"""

from __future__ import annotations

import datetime as dt
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

from textual.screen import Screen

from redline.deciding.edits import (
    FileEdit,
    accepted_entry,
    assertion_value_key,
    baseline_warnings,
    case_assertions,
    check_edit,
    plan_accept_baseline,
    plan_loosen,
    plan_quarantine,
    plan_raise_samples,
    plan_retire,
    raised_bar,
    typed_value,
    value_as_text,
    value_kind,
)
from redline.deciding.history import case_history, find_marginal
from redline.deciding.rerun import find_case, suggested_samples
from redline.errors import ProblemsError, RedlineError, UsageError
from redline.gitio import stage_file, staged_besides
from redline.guard import index_has_prompt_change, loosenings_between
from redline.textsafe import preview
from redline.vocabulary.causes import TriageState
from redline.vocabulary.records import CaseRecord, RunRecord, RunStatus, TriageRecord
from redline_tui.context import TriageContext
from redline_tui.messages import FilesStaged, TriageMarked
from redline_tui.widgets.dialogs import (
    Choice,
    ConfirmDialog,
    Field,
    FormDialog,
    MessageDialog,
    PickerDialog,
    future_date,
    whole_number,
)

#: How long a quarantine lasts unless the user says otherwise.
QUARANTINE_DAYS = dt.timedelta(days=14)

Flow = Callable[[Screen[None], TriageContext, RunRecord, CaseRecord], Awaitable[None]]


def start_case_action(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord, name: str
) -> None:
    """Run one action's dialogs in a worker so the app keeps drawing while the user decides.

    The worker gets a coroutine *function*: a coroutine object made up front would never be
    awaited when the worker is cancelled before it starts (on quit, or by the next action).
    """
    flow = _FLOWS[name]

    async def run_flow() -> None:
        await flow(screen, ctx, run, case)

    screen.run_worker(run_flow, exclusive=True, group="case-action")  # type: ignore[arg-type]


def edit_loosenings(edit: FileEdit) -> list[str]:
    """What the guard would call a loosening in this edit (a retire deletes the case)."""
    found: list[str] = []
    for path, old in edit.before.items():
        new = edit.writes.get(path)
        found.extend(str(f) for f in loosenings_between(old, new, path=path))
    return found


def stage_edit(root: Path, edit: FileEdit) -> list[str]:
    """Write the edit and `git add` exactly its files; returns their paths as staged."""
    edit.apply()
    staged = []
    for path in edit.paths:
        stage_file(root, path)
        staged.append(_rel(path, root))
    return staged


async def _case_file(
    screen: Screen[None], ctx: TriageContext, case: CaseRecord
) -> tuple[Path, Path] | None:
    if ctx.config is None:
        await _tell(screen, "No configuration", "No redline config was found: cannot edit cases.")
        return None
    try:
        suite, found = find_case(ctx.config, case.suite, case.case_id)
    except RedlineError as exc:
        await _tell(screen, "Case file not found", str(exc))
        return None
    return found.path, suite.path


async def _tell(screen: Screen[None], title: str, body: str) -> None:
    await screen.app.push_screen_wait(MessageDialog(title, body))


async def _confirm_and_stage(screen: Screen[None], ctx: TriageContext, edit: FileEdit) -> bool:
    loosening = edit_loosenings(edit)
    if loosening:
        try:
            prompt_changes = index_has_prompt_change(ctx.root)
        except RedlineError as exc:
            await _tell(screen, "Refused", f"Cannot check the index for prompt changes: {exc}")
            return False
        if prompt_changes:
            await _tell(
                screen,
                "Refused: the index holds a prompt change",
                "This edit loosens the suite:\n  "
                + "\n  ".join(loosening)
                + "\n\nand the index already holds a prompt change:\n  "
                + "\n  ".join(prompt_changes)
                + "\n\nA commit holding a prompt change and the permission to accept it "
                "cannot be reviewed. Commit (or unstage) the prompt change first, then "
                "loosen in a commit of its own.",
            )
            return False
    try:
        others = staged_besides(ctx.root, edit.paths)
    except RedlineError as exc:
        await _tell(screen, "Refused", f"Cannot read the index: {exc}")
        return False
    lines, kinds = edit.diff(ctx.root)
    footer = f"Commit message to use: {edit.commit_message}"
    if others:
        footer += "\nThe index already holds other staged changes: " + ", ".join(others)
    if loosening:
        footer = "Loosens: " + "; ".join(loosening) + "\n" + footer
    if not await screen.app.push_screen_wait(ConfirmDialog(edit.title, lines, kinds, footer)):
        screen.notify("Cancelled: nothing written")
        return False
    try:
        staged = stage_edit(ctx.root, edit)
    except RedlineError as exc:
        await _tell(screen, "Written but not staged", str(exc))
        return False
    screen.app.post_message(FilesStaged(staged, edit.commit_message))
    await _tell(screen, "Staged, not committed", _staged_note(staged, others, edit.commit_message))
    return True


def _staged_note(staged: list[str], others: list[str], message: str) -> str:
    """What was staged and the commit that holds exactly it: with other changes staged
    already, a plain `git commit` would take them too, so the command names its files."""
    command = f"git commit -m {_shell_quote(message)}"
    if not others:
        return (
            "Staged alone: " + ", ".join(staged) + f"\n\nCommit it as its own commit:\n  {command}"
        )
    files = " ".join(_shell_quote(path) for path in staged)
    return (
        "Staged: "
        + ", ".join(staged)
        + "\n\nThe index also holds other staged changes ("
        + ", ".join(others)
        + "): a plain git commit would take them too. Commit only this change:\n"
        + f"  {command} -- {files}"
    )


async def _raise_samples(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, _ = found
    marginal = find_marginal(case_history(ctx.store, case.case_id, case.suite).scheduled)
    needed = marginal.samples_needed if marginal is not None else None
    suggested, why = suggested_samples(case.samples, needed)
    note = f"The case runs {case.samples} samples now. {why}".rstrip()
    minimum = case.samples + 1

    def effect(values: dict[str, str]) -> str:
        typed = values.get("samples", "")
        if not typed.isdigit() or int(typed) < minimum:
            return ""
        bar = raised_bar(path, int(typed))
        if bar is None:
            return f"samples.max becomes {typed}; the sequential plan keeps its min and bar"
        return f"The {bar.describe()}: the same pass rate"

    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Raise samples of {case.case_id}",
            [
                Field(
                    "samples",
                    "New samples (a whole number)",
                    str(suggested),
                    check=whole_number(minimum),
                )
            ],
            note,
            effect=effect,
        )
    )
    if values is None:
        return
    await _plan_and_stage(
        screen, ctx, lambda: plan_raise_samples(path, case.case_id, int(values["samples"]))
    )


async def _retire(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, suite_dir = found
    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Retire {case.case_id}",
            [Field("reason", "Reason"), Field("by", "By", ctx.user)],
            "The case moves to retired/ with retired: {date, reason, by}; retired cases "
            "are not run.",
        )
    )
    if values is None:
        return
    staged = await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_retire(
            path, suite_dir, case.case_id, values["reason"], values["by"], ctx.today()
        ),
    )
    if staged:
        _mark_triage(screen, ctx, run, case, TriageState.RETIRED)


async def _loosen(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, _ = found
    assertions = case_assertions(path)
    if not assertions:
        await _tell(screen, "Nothing to loosen", f"{case.case_id} has no assertions.")
        return
    failing = Counter(a.index for s in ctx.samples(run.id, case) for a in s.assertions if a.failed)
    values = await screen.app.push_screen_wait(_loosen_picker(case, assertions, failing))
    if values is None:
        return
    await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_loosen(
            path,
            case.case_id,
            int(values["choice"]),
            values["value"],
            values["reason"],
            ctx.today(),
        ),
    )


def _loosen_picker(
    case: CaseRecord, assertions: list[Mapping[str, Any]], failing: Counter[int]
) -> PickerDialog:
    """Pick one assertion (the most failed first) and type its new value and a reason."""
    default = failing.most_common(1)[0][0] if failing else 0
    choices = [_assertion_choice(i, item, failing.get(i, 0)) for i, item in enumerate(assertions)]

    def current(choice: str) -> dict[str, tuple[str, str]]:
        item = assertions[int(choice)]
        try:
            key = assertion_value_key(item)
        except UsageError:
            return {"value": ("This assertion has no value to change", "")}
        return {
            "value": (f"New {key}: {value_kind(item[key])}", value_as_text(item[key])),
        }

    def check(values: dict[str, str]) -> str | None:
        item = assertions[int(values["choice"])]
        try:
            typed_value(item[assertion_value_key(item)], values["value"])
        except UsageError as exc:
            return str(exc)
        return None

    return PickerDialog(
        f"Loosen one assertion of {case.case_id}",
        choices,
        [
            Field("value", "New value", strip=False),
            Field("reason", "Reason (written next to it in the case file)"),
        ],
        "Pick the assertion (↑ ↓), then type its new value: text is kept literally, "
        "numbers are checked.",
        initial=default,
        on_pick=current,
        check=check,
    )


def _assertion_choice(index: int, item: Mapping[str, Any], failed: int) -> Choice:
    """`0  contains  value: 12,000  · failed 2×`, with the whole value as the detail."""
    try:
        key = assertion_value_key(item)
        value = value_as_text(item[key])
        shown = f"{key}: {preview(value, 50)}"
        detail = f"current {key}: {preview(value, 300)}"
    except UsageError:
        shown, detail = "(no value)", "This assertion has no value to change."
    label = f"{index}  {item.get('type')}  {shown}  · failed {failed}×"
    return Choice(label, str(index), detail)


async def _accept_baseline(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    # Only a finished run can be accepted: a cancelled rerun is not offered.
    reruns = [r for r, _ in ctx.reruns_of(run.id, case) if r.status is RunStatus.FINISHED]
    default = reruns[-1].id if reruns else run.id
    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Accept a new baseline for {case.case_id}",
            [Field("run", "From run (the red run or one of its reruns)", default)],
            f"Red run {run.id}" + (f"; latest finished rerun {reruns[-1].id}" if reruns else ""),
        )
    )
    if values is None:
        return
    try:
        source = ctx.store.run(values["run"])
    except RedlineError as exc:
        await _tell(screen, "Unknown run", str(exc))
        return
    record = ctx.store.case(source.id, case.suite, case.case_id)
    if record is None:
        await _tell(screen, "No result", f"run {source.id} has no result for {case.case_id}")
        return
    samples = ctx.samples(source.id, record)
    previous = accepted_entry(ctx.baseline_dir, case.suite, case.case_id)
    warnings = baseline_warnings(previous, record, _pinned_model(ctx, case))
    reason = ""
    if warnings:
        answer = await screen.app.push_screen_wait(
            FormDialog(
                f"Accept a lower or other-model baseline for {case.case_id}?",
                [Field("reason", "Reason (kept in the baseline file and the commit message)")],
                "\n".join(warnings) + "\nEvery later run is held to the accepted baseline; say "
                "why this one should be.",
            )
        )
        if answer is None:
            screen.notify("Cancelled: nothing written")
            return
        reason = answer["reason"]
    staged = await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_accept_baseline(ctx.baseline_dir, source, record, samples, reason),
    )
    if staged:
        _mark_triage(screen, ctx, run, case, TriageState.ACCEPTED)


def _pinned_model(ctx: TriageContext, case: CaseRecord) -> str | None:
    """The model id the case's suite pins now, None when the suite cannot be read."""
    if ctx.config is None:
        return None
    try:
        suite, _ = find_case(ctx.config, case.suite, case.case_id)
    except RedlineError:
        return None
    model = ctx.config.models.get(suite.model)
    return None if model is None else model.id


async def _plan_and_stage(
    screen: Screen[None], ctx: TriageContext, plan: Callable[[], FileEdit]
) -> bool:
    """True when the change was written and staged."""
    try:
        edit = plan()
    except RedlineError as exc:
        await _tell(screen, "Cannot make this change", str(exc))
        return False
    try:
        check_edit(edit, ctx.config)
    except ProblemsError as exc:
        await _tell(
            screen,
            "Refused: the edited case file would not load",
            "Nothing was written. redline's own loader reports:\n"
            + "\n".join(f"  {p}" for p in exc.problems),
        )
        return False
    return await _confirm_and_stage(screen, ctx, edit)


def _mark_triage(
    screen: Screen[None],
    ctx: TriageContext,
    run: RunRecord,
    case: CaseRecord,
    state: TriageState,
) -> None:
    """The case's triage ends in an action: stored, so the home table says so next time too."""
    previous = ctx.store.triage(run.id).get((case.suite, case.case_id))
    detail = previous.detail if previous is not None else {}
    ctx.store.put_triage(TriageRecord(run.id, case.suite, case.case_id, state, 1.0, detail))
    screen.app.post_message(TriageMarked((run.id, case.suite, case.case_id), state))


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


async def _quarantine(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, _ = found
    today = ctx.today()
    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Quarantine {case.case_id}",
            [
                Field("reason", "Reason"),
                Field("ticket", "Ticket (optional)", required=False),
                Field(
                    "until",
                    "Until (YYYY-MM-DD; it counts again after that day)",
                    (today + QUARANTINE_DAYS).isoformat(),
                    check=future_date(today),
                ),
            ],
            "A quarantined case keeps running and reporting but cannot turn a run red "
            "until that date. Adding one counts as a loosening: never in a commit with a "
            "prompt change.",
        )
    )
    if values is None:
        return
    staged = await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_quarantine(
            path,
            case.case_id,
            values["reason"],
            values.get("ticket", ""),
            dt.date.fromisoformat(values["until"]),
            today,
        ),
    )
    if staged:
        _mark_triage(screen, ctx, run, case, TriageState.QUARANTINED)


_FLOWS: dict[str, Flow] = {
    "quarantine": _quarantine,
    "raise_samples": _raise_samples,
    "retire": _retire,
    "loosen": _loosen,
    "accept_baseline": _accept_baseline,
}
