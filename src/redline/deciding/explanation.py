"""A diagnosis in plain words: the conclusion in one or two sentences, with its numbers."""

from __future__ import annotations

from redline.deciding.arms import ArmCounts, ArmKind
from redline.deciding.changes import Change, pinned
from redline.deciding.decision import ON_BALANCE_CONFIDENCE
from redline.deciding.diagnosis import Diagnosis
from redline.deciding.stats import wilson_interval
from redline.vocabulary.causes import Cause


def p_value_label(key: str) -> str:
    """What a p-value of a diagnosis tests, in words."""
    names = {
        ArmKind.REFERENCE_PROMPT.value: "reference prompt",
        ArmKind.REFERENCE_MODEL.value: "reference model",
    }
    if key == "drift since the red run":
        return "stored history passes more often than the samples drawn since (one-sided Fisher)"
    if key == "drift in the red run":
        return "stored history passes more often than the red run (one-sided Fisher)"
    arm, _, test = key.partition(" ")
    name = names.get(arm, arm)
    if test == "no better":
        return f"{name} no better than yours by the margin (one-sided equivalence)"
    return f"{name} passes more often than yours (one-sided Fisher)"


def explain(d: Diagnosis, why: str = "") -> str:
    """The conclusion in one or two plain sentences, with its numbers."""
    arms = {a.kind: a for a in d.arms}
    red = arms.get(ArmKind.RED)
    if d.cause is Cause.CASE_CHANGED:
        what = "; ".join(c.detail for c in d.changes if c.kind in (Change.CASE, Change.VARS))
        return (
            f"The case changed since the reference ({what}): nothing was compared. "
            "A changed case is not a regression; judge the new case on its own runs."
        )
    if d.cause is Cause.PROMPT and red is not None:
        ref = arms[ArmKind.REFERENCE_PROMPT]
        kinds = {c.kind for c in d.changes}
        settings = "; ".join(c.detail for c in d.changes if c.generation)
        what = "prompt change" if Change.PROMPT in kinds else f"settings change ({settings})"
        return (
            f"Your {what} regressed it: the reference prompt and settings pass {_rate(d, ref)} "
            f"on the same model, yours {_rate(d, red)}{_p(d, ArmKind.REFERENCE_PROMPT)}."
        )
    if d.cause is Cause.MODEL and red is not None:
        ref = arms[ArmKind.REFERENCE_MODEL]
        return (
            f"The model change regressed it: your prompt passes {_rate(d, ref)} on the "
            f"reference model {pinned(ref.model_id)}, {_rate(d, red)} on "
            f"{pinned(red.model_id)}{_p(d, ArmKind.REFERENCE_MODEL)}."
        )
    if d.cause is Cause.DRIFT and red is not None:
        return _explain_drift(d, red, why)
    if d.cause is Cause.SETTINGS and red is not None:
        return _explain_settings(d, red)
    if d.cause is Cause.CASE and red is not None:
        return _explain_case_at_fault(d, red)
    if d.cause is Cause.NOISE and red is not None:
        return _explain_noise(d, red, why)
    return _explain_undecided(d, why)


def _rate(d: Diagnosis, a: ArmCounts) -> str:
    low, high = a.interval(d.confidence)
    stored = ""
    if a.stored:
        runs = "1 stored run" if len(a.stored) == 1 else f"{len(a.stored)} stored runs"
        stored = f"; {a.stored_counts[1]} of them from {runs}"
    return f"{a.passes}/{a.samples} ({low:.0%}–{high:.0%}{stored})"


def _counts(d: Diagnosis, passes: int, samples: int) -> str:
    low, high = wilson_interval(passes, samples, d.confidence)
    return f"{passes}/{samples} ({low:.0%}–{high:.0%})"


def _p(d: Diagnosis, kind: ArmKind) -> str:
    value = d.p_values.get(kind.value)
    return "" if value is None else f", one-sided Fisher p = {value:.3g}"


def _explain_drift(d: Diagnosis, red: ArmCounts, why: str) -> str:
    before_passes, before_samples = d.history.before
    runs = d.history.runs_before
    history = (
        f"{_counts(d, before_passes, before_samples)} in {runs} stored "
        f"run{'' if runs == 1 else 's'} before it"
    )
    now_passes = red.passes - before_passes
    now_samples = red.samples - before_samples
    lead = (
        f"Drift: nothing in your repository changed; the model or provider behind "
        f"{pinned(red.model_id)} now answers differently. The same configuration passed "
        f"{history}"
    )
    if why == "now":
        p = d.p_values.get("drift since the red run")
        body = (
            f", and {_counts(d, now_passes, now_samples)} since the red run"
            f"{'' if p is None else f' (one-sided Fisher p = {p:.3g})'}."
        )
    else:
        rp, rn = d.history.red_run
        p = d.p_values.get("drift in the red run")
        body = (
            f"; the red run {rp}/{rn}"
            f"{'' if p is None else f' (one-sided Fisher p = {p:.3g})'}: not a rare miss. "
            f"Rerun now it passes {_counts(d, now_passes, now_samples)}: the provider "
            "answered differently that night."
        )
    evidence = (
        f" The provider's own description changed: {d.provider_change}."
        if d.provider_change
        else ""
    )
    return f"{lead}{body}{evidence} Read the red run's outputs; pin a dated model id if it has one."


def _explain_settings(d: Diagnosis, red: ArmCounts) -> str:
    old = d.history.old_bar
    assert old is not None
    bar = d.bar
    return (
        f"Your settings change made it red: its bar went from {old.required}/{old.samples} "
        f"({old.rate:.0%}) to {bar.required}/{bar.samples} ({bar.rate:.0%}), above the "
        f"case's measured rate of {red.rate:.0%} per sample ({_rate(d, red)}). At that rate "
        f"it clears the old bar in about {old.clears(red.rate):.0%} of runs and the new one "
        f"in about {bar.clears(red.rate):.0%}. Set the bar back, or keep it and improve the "
        "prompt until the case passes at the new rate."
    )


def _explain_case_at_fault(d: Diagnosis, red: ArmCounts) -> str:
    others = [a for a in d.arms if a.kind is not ArmKind.RED and a.skipped is None]
    where = " and ".join(f"{a.label}: {_rate(d, a)}" for a in others)
    lead = (
        f"It fails on the reference configuration too ({where}; yours {_rate(d, red)})"
        if others
        else f"Nothing changed since the reference that could explain it, and it fails "
        f"again: {_rate(d, red)}"
    )
    return (
        f"{lead}, far below its bar of {d.bar.required}/{d.bar.samples}: the case or its "
        "assertion is at fault, not your change."
        + (
            ""
            if others
            else " (If the model behind the same id changed, that is drift: read the outputs.)"
        )
    )


def _explain_noise(d: Diagnosis, red: ArmCounts, why: str) -> str:
    sampled = [a for a in d.arms if a.skipped is None]
    if len(sampled) == 1:
        lead = (
            f"Noise (one arm: the case passes at {red.rate:.0%} when rerun, {_rate(d, red)}; "
            "nothing changed to undo). "
        )
    else:
        shown = "; ".join(f"{a.label}: {_rate(d, a)}" for a in sampled)
        if why == "on-balance":
            same = (
                f"; on balance, with the stored runs agreeing with the reruns: undoing the "
                f"change raises the rate by less than {d.margin * 100:.0f} points at "
                f"{ON_BALANCE_CONFIDENCE:.0%} confidence"
            )
        else:
            same = f"; undoing the change raises the rate by less than {d.margin * 100:.0f} points"
        lead = f"Noise: the rates are indistinguishable ({shown}{same}). "
    clears = d.bar.clears(red.rate)
    at = f"at {red.rate:.0%} per sample it clears its bar of {d.bar.required}/{d.bar.samples}"
    if clears >= 0.9:
        return f"{lead}The red run was a rare miss: {at} in about {clears:.0%} of runs."
    return (
        f"{lead}The case is marginal: {at} in about {clears:.0%} of runs. "
        "Raise its samples or retire it."
    )


def _explain_undecided(d: Diagnosis, why: str) -> str:
    if d.stopped:
        done = ", ".join(f"{a.label}: {_rate(d, a)}" for a in d.arms if a.skipped is None)
        return f"Stopped before a decision; the samples so far are kept ({done})."
    if why == "model-untested":
        return (
            "Undecided: the pinned model changed and the reference model cannot be run here, "
            "so the model cannot be ruled out; configure its provider again to decide."
        )
    if any(a.samples == 0 for a in d.arms if a.skipped is None):
        return (
            "Undecided: an arm has no content sample (every answer was a transport failure or "
            "cut off); check the provider and run it again."
        )
    per_arm = max((a.samples for a in d.arms if a.skipped is None), default=0)
    if d.more_samples is None:
        more = "more samples at these rates would not decide it (they sit on the margin)"
    else:
        more = f"about {d.more_samples} more samples per arm would decide it"
    return f"Undecided after {per_arm} samples per arm: {more}."
