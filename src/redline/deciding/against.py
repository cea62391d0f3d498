"""`redline run --model ALIAS --against RUN_ID`: the reference run's cases on another model.

Same cases, same sample counts, same inputs: the hash manifest of the suites on disk must
match the reference run's, apart from the pinned model and redline's version. Otherwise
the comparison would mix a migration with an edit, so the run is refused, naming every
input that differs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from redline.deciding.compare import manifest_changes
from redline.errors import RunNotFinished, UsageError
from redline.running.manifest import MODEL_KEY, VERSION_KEY
from redline.running.options import RunOptions
from redline.running.runner import run_manifest
from redline.running.store import RunStore
from redline.suite.cases import Suite
from redline.vocabulary.records import RunKind, RunRecord, RunStatus

#: Manifest keys that may differ: the model is what changes, the version is not an input.
_NOT_INPUTS = frozenset({MODEL_KEY, VERSION_KEY})


def against_options(
    store: RunStore, reference: RunRecord, suites: Sequence[Suite], options: RunOptions
) -> RunOptions:
    """`options` narrowed to the reference run's cases at its sample counts; raises
    UsageError when the inputs on disk differ from the reference run's."""
    if reference.kind is RunKind.REPLAY:
        raise UsageError(
            f"run {reference.id} is a replay; compare against the run it replayed "
            f"({reference.parent_id}) instead"
        )
    if reference.status is not RunStatus.FINISHED:
        raise RunNotFinished(
            f"run {reference.id} is {reference.status}: finish it first "
            f"(redline run --resume {reference.id})"
        )
    cases = store.cases(reference.id)
    if not cases:
        raise UsageError(f"run {reference.id} has no case results to run against")
    current = run_manifest(suites, "")
    differ = [m for m in manifest_changes(reference.manifest, current) if m.path not in _NOT_INPUTS]
    if differ:
        shown = "; ".join(f"{m.kind} {m.path}" for m in differ[:20])
        more = f"; and {len(differ) - 20} more" if len(differ) > 20 else ""
        raise UsageError(
            f"the inputs differ from run {reference.id} ({len(differ)}: {shown}{more}); "
            "a comparison would mix the model change with these edits. Restore the files, "
            f"or run {reference.model_alias} again on the current inputs and use that run"
        )
    counts = {f"{c.suite}/{c.case_id}": c.samples for c in cases}
    return dataclasses.replace(
        options,
        case_ids=tuple(dict.fromkeys(c.case_id for c in cases)),
        case_samples=counts,
        against=reference.id,
    )
