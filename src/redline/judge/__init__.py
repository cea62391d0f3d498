"""Layer 2: a rubric judge, calibrated against people before it is trusted.

docs/rules.md: The judge is an instrument that needs a scale.

Every name below is importable from here; its submodule loads at first use, so a run
without judge assertions never imports pydantic or the judge's provider stack.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from redline.judge.agreement import Agreement, cohens_kappa
    from redline.judge.answer import (
        Judgement,
        JudgeStatus,
        answer_model,
        answer_schema,
        read_answer,
    )
    from redline.judge.calibration import (
        MIN_LABELS,
        Calibration,
        Fingerprint,
        Trust,
        calibrate,
        calibration_path,
        fingerprint,
        judge_trust,
        read_calibration,
        write_calibration,
    )
    from redline.judge.call import judge_output, judge_provider
    from redline.judge.labels import Label, labels_path, read_labels, write_labels
    from redline.judge.rubric import Rubric, load_rubric
    from redline.judge.scores import ScoreSummary, case_score_summaries, summarize_scores

_HOME = {
    "Agreement": "agreement",
    "cohens_kappa": "agreement",
    "Judgement": "answer",
    "JudgeStatus": "answer",
    "answer_model": "answer",
    "answer_schema": "answer",
    "read_answer": "answer",
    "MIN_LABELS": "calibration",
    "Calibration": "calibration",
    "Fingerprint": "calibration",
    "Trust": "calibration",
    "calibrate": "calibration",
    "calibration_path": "calibration",
    "fingerprint": "calibration",
    "judge_trust": "calibration",
    "read_calibration": "calibration",
    "write_calibration": "calibration",
    "judge_output": "call",
    "judge_provider": "call",
    "Label": "labels",
    "labels_path": "labels",
    "read_labels": "labels",
    "write_labels": "labels",
    "Rubric": "rubric",
    "load_rubric": "rubric",
    "ScoreSummary": "scores",
    "case_score_summaries": "scores",
    "summarize_scores": "scores",
}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'redline.judge' has no attribute {name!r}")
    return getattr(importlib.import_module(f"redline.judge.{home}"), name)


__all__ = [
    "MIN_LABELS",
    "Agreement",
    "Calibration",
    "Fingerprint",
    "JudgeStatus",
    "Judgement",
    "Label",
    "Rubric",
    "ScoreSummary",
    "Trust",
    "answer_model",
    "answer_schema",
    "calibrate",
    "calibration_path",
    "case_score_summaries",
    "cohens_kappa",
    "fingerprint",
    "judge_output",
    "judge_provider",
    "judge_trust",
    "labels_path",
    "load_rubric",
    "read_answer",
    "read_calibration",
    "read_labels",
    "summarize_scores",
    "write_calibration",
    "write_labels",
]
