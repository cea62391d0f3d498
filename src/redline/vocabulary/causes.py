"""What triage can name as the reason a case went red.

Its own module so that what only shows a cause (the palette, the CLI, the app's rows)
does not load the analysis that finds one.
"""

from __future__ import annotations

from enum import StrEnum


class Cause(StrEnum):
    PROMPT = "prompt"
    MODEL = "model"
    CASE = "case"
    NOISE = "noise"
    #: Nothing in the repository changed; the model or provider behind the id answers differently.
    DRIFT = "drift"
    #: A settings change moved the case's bar above its measured pass rate.
    SETTINGS = "settings"
    CASE_CHANGED = "case-changed"
    UNDECIDED = "undecided"


class TriageState(StrEnum):
    """Where the triage of one case stands, as the store keeps it: the cause found (its
    value is the cause's), the reruns under way or cut off, or the action that settled it."""

    PROMPT = Cause.PROMPT.value
    MODEL = Cause.MODEL.value
    CASE = Cause.CASE.value
    NOISE = Cause.NOISE.value
    DRIFT = Cause.DRIFT.value
    SETTINGS = Cause.SETTINGS.value
    CASE_CHANGED = Cause.CASE_CHANGED.value
    UNDECIDED = Cause.UNDECIDED.value
    RUNNING = "running"
    STOPPED = "stopped"
    RETIRED = "retired"
    ACCEPTED = "accepted"
    QUARANTINED = "quarantined"

    @classmethod
    def found(cls, cause: Cause) -> TriageState:
        """The state of a case whose analysis concluded `cause`."""
        return cls(cause.value)


_CONCLUSIONS = frozenset(c.value for c in Cause if c is not Cause.UNDECIDED)


def is_conclusion(state: object) -> bool:
    """A triage state that answers why the case is red (undecided, running or stopped do not)."""
    return str(state) in _CONCLUSIONS
