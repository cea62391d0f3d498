"""The four case actions: ask, show the exact change, write, stage that change alone.

Nothing is committed: the user commits the staged change with the message shown, as
its own reviewable commit. A loosening (as the guard sees it) is refused while the
index holds a prompt change (never loosen a threshold in the commit of a prompt change).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Awaitable, Callable
from pathlib import Path

from textual.screen import Screen

from redline.errors import RedlineError, UsageError
from redline.gitio import stage_file
from redline.guard import index_has_prompt_change, loosenings_between
from redline.history import case_history, find_marginal
from redline.records import CaseRecord, RunRecord, RunStatus
from redline.rerun import default_samples, find_case
from redline_tui.context import TriageContext
from redline_tui.edits import (
    FileEdit,
    assertion_value_key,
    case_assertions,
    plan_accept_baseline,
    plan_loosen,
    plan_raise_samples,
    plan_retire,
)
from redline_tui.messages import FilesStaged
from redline_tui.widgets.dialogs import ConfirmDialog, Field, FormDialog, MessageDialog

Flow = Callable[[Screen[None], TriageContext, RunRecord, CaseRecord], Awaitable[None]]


def start_case_action(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord, name: str
) -> None:
    """Run one action's dialogs in a worker so the app keeps drawing while the user decides."""
    screen.run_worker(_FLOWS[name](screen, ctx, run, case), exclusive=True, group="case-action")


def edit_loosenings(edit: FileEdit) -> list[str]:
    """What the guard would call a loosening in this edit (a retire deletes the case)."""
    found: list[str] = []
    for path, old in edit.before.items():
        new = edit.writes.get(path)
        found.extend(str(f) for f in loosenings_between(old, new, path=path.name))
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


async def _confirm_and_stage(screen: Screen[None], ctx: TriageContext, edit: FileEdit) -> None:
    loosening = edit_loosenings(edit)
    if loosening:
        try:
            prompt_changes = index_has_prompt_change(ctx.root)
        except RedlineError as exc:
            await _tell(screen, "Refused", f"Cannot check the index for prompt changes: {exc}")
            return
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
            return
    lines, kinds = edit.diff(ctx.root)
    footer = f"Commit message to use: {edit.commit_message}"
    if loosening:
        footer = "Loosens: " + "; ".join(loosening) + "\n" + footer
    if not await screen.app.push_screen_wait(ConfirmDialog(edit.title, lines, kinds, footer)):
        screen.notify("Cancelled: nothing written")
        return
    try:
        staged = stage_edit(ctx.root, edit)
    except RedlineError as exc:
        await _tell(screen, "Written but not staged", str(exc))
        return
    screen.app.post_message(FilesStaged(staged, edit.commit_message))
    await _tell(
        screen,
        "Staged, not committed",
        "Staged alone: " + ", ".join(staged) + "\n\nCommit it as its own commit:\n"
        f"  git commit -m {_shell_quote(edit.commit_message)}",
    )


async def _raise_samples(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, _ = found
    suggested = default_samples(case.samples)
    marginal = find_marginal(case_history(ctx.store, case.case_id, case.suite).scheduled)
    note = f"The case runs {case.samples} samples now."
    if marginal is not None and marginal.samples_needed is not None:
        suggested = max(suggested, marginal.samples_needed)
        note += f" Its history suggests about {marginal.samples_needed} to decide it."
    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Raise samples of {case.case_id}",
            [Field("samples", "New samples", str(suggested))],
            note,
        )
    )
    if values is None:
        return
    if not values["samples"].isdigit():
        await _tell(screen, "Not a number", f"{values['samples']!r} is not a whole number")
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
    await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_retire(
            path, suite_dir, case.case_id, values["reason"], values["by"], ctx.today()
        ),
    )


async def _loosen(
    screen: Screen[None], ctx: TriageContext, run: RunRecord, case: CaseRecord
) -> None:
    found = await _case_file(screen, ctx, case)
    if found is None:
        return
    path, _ = found
    assertions = case_assertions(path)
    failing = Counter(a.index for s in ctx.samples(run.id, case) for a in s.assertions if a.failed)
    default = failing.most_common(1)[0][0] if failing else 0
    listing = []
    for i, item in enumerate(assertions):
        try:
            value = f"{assertion_value_key(item)}: {item[assertion_value_key(item)]!r}"
        except UsageError:
            value = "(no value)"
        listing.append(f"[{i}] {item.get('type')} {value}  (failed {failing.get(i, 0)}×)")
    values = await screen.app.push_screen_wait(
        FormDialog(
            f"Loosen one assertion of {case.case_id}",
            [
                Field("index", "Assertion number", str(default)),
                Field("value", "New value"),
                Field("reason", "Reason (written next to it in the case file)"),
            ],
            "\n".join(listing),
        )
    )
    if values is None:
        return
    if not values["index"].isdigit():
        await _tell(screen, "Not a number", f"{values['index']!r} is not an assertion number")
        return
    await _plan_and_stage(
        screen,
        ctx,
        lambda: plan_loosen(
            path, case.case_id, int(values["index"]), values["value"], values["reason"], ctx.today()
        ),
    )


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
    record = next(
        (
            c
            for c in ctx.store.cases(source.id)
            if c.case_id == case.case_id and c.suite == case.suite
        ),
        None,
    )
    if record is None:
        await _tell(screen, "No result", f"run {source.id} has no result for {case.case_id}")
        return
    samples = ctx.samples(source.id, record)
    await _plan_and_stage(
        screen, ctx, lambda: plan_accept_baseline(ctx.baseline_dir, source, record, samples)
    )


async def _plan_and_stage(
    screen: Screen[None], ctx: TriageContext, plan: Callable[[], FileEdit]
) -> None:
    try:
        edit = plan()
    except RedlineError as exc:
        await _tell(screen, "Cannot make this change", str(exc))
        return
    await _confirm_and_stage(screen, ctx, edit)


def _shell_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def _rel(path: Path, root: Path) -> str:
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return str(path)


_FLOWS: dict[str, Flow] = {
    "raise_samples": _raise_samples,
    "retire": _retire,
    "loosen": _loosen,
    "accept_baseline": _accept_baseline,
}
