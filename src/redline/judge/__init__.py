"""Layer 2: a rubric judge, calibrated against people before it is trusted (DESIGN rule 9)."""

from redline.judge.agreement import Agreement, cohens_kappa
from redline.judge.answer import Judgement, JudgeStatus, answer_model, answer_schema, read_answer
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
from redline.judge.session import JudgeSession, judge_pending

__all__ = [
    "MIN_LABELS",
    "Agreement",
    "Calibration",
    "Fingerprint",
    "JudgeSession",
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
    "judge_pending",
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
