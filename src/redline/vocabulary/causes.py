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
    CASE_CHANGED = "case-changed"
    UNDECIDED = "undecided"
