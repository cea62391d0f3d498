"""Which red cases of a scheduled run drifted: nothing they read changed, yet they fail
significantly more than their stored runs of the same configuration on that model id.

What the nightly report says in one line ("3 cases drifted since last night") before
anyone has triaged: the same test Step 1 applies to the red run alone, at the same
strictness, on the samples already in the store.
"""

from __future__ import annotations

from redline.deciding.arms import window_start
from redline.deciding.decision import (
    DRIFT_MIN_HISTORY,
    DRIFT_STRICTNESS,
    Settings,
    red_run_drift_p,
)
from redline.running.store import RunStore
from redline.vocabulary.records import CaseOutcome, CaseRecord, RunKind, RunRecord


def drifted_cases(
    store: RunStore, run: RunRecord, previous: RunRecord | None, settings: Settings | None = None
) -> list[CaseRecord]:
    """The failing cases of `run` whose configuration is the one `previous` (last night) ran
    and whose stored runs of it before `run` (within the window) pass significantly more."""
    if previous is None:
        return []
    settings = settings or Settings()
    looks = settings.looks
    alpha = settings.alpha_at(len(looks) - 1, len(looks)) / DRIFT_STRICTNESS
    since = window_start(run, settings.window_days)
    last_night = {(c.suite, c.case_id): c for c in store.cases(previous.id)}
    found = []
    for case in store.cases(run.id):
        before = last_night.get((case.suite, case.case_id))
        if case.result is not CaseOutcome.FAIL or before is None or not case.config_hash:
            continue
        if before.config_hash != case.config_hash:
            continue  # something the case reads changed since last night
        passes = samples = 0
        for stored_run, record in store.case_history(case.case_id, case.suite):
            if stored_run.id == run.id or stored_run.kind is RunKind.REPLAY:
                continue
            if not since <= stored_run.started_at < run.started_at:
                continue
            if record.config_hash == case.config_hash:
                passes += record.passes
                samples += record.content_samples
        if samples < DRIFT_MIN_HISTORY:
            continue
        if red_run_drift_p((passes, samples), (case.passes, case.content_samples)) < alpha:
            found.append(case)
    return found
