"""Calibration: how far a judge agrees with people, and whether it may be trusted.

`<rubric>.calibration.json` beside the rubric records kappa, n and the date with
the SHA-256 of the three things that define the instrument: the rubric file,
the judge prompt template and the pinned judge model id. When any of them
changes, the calibration is stale. A judge is trusted only when its
calibration is current, has at least MIN_LABELS labels of both kinds, and its
kappa reaches the rubric's own `min_kappa`; otherwise it is advisory and can
never turn a run red.
"""

from __future__ import annotations

import asyncio
import datetime
import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redline.config import DEFAULT_CONCURRENCY, ModelRef
from redline.errors import ConfigError, relpath
from redline.judge.agreement import FAIL, LABELS, PASS, Agreement, cohens_kappa
from redline.judge.answer import Judgement, JudgeStatus, judge_prompt_template
from redline.judge.call import judge_output
from redline.judge.labels import Label
from redline.judge.rubric import Rubric
from redline.providers.base import Provider, in_flight, ride_rate_limit

MIN_LABELS = 20
CALIBRATION_SUFFIX = ".calibration.json"
FORMAT_VERSION = 1


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Fingerprint:
    """The judge as an instrument: what a calibration is valid for."""

    rubric_sha256: str
    prompt_sha256: str
    model_sha256: str
    model_id: str

    def changes_from(self, older: Fingerprint) -> list[str]:
        """Which of the three inputs differ from an older fingerprint."""
        changed = []
        if self.rubric_sha256 != older.rubric_sha256:
            changed.append("rubric file")
        if self.prompt_sha256 != older.prompt_sha256:
            changed.append("judge prompt template")
        if self.model_sha256 != older.model_sha256:
            changed.append(f"judge model ({older.model_id} → {self.model_id})")
        return changed


def fingerprint(rubric: Rubric, model_id: str) -> Fingerprint:
    return Fingerprint(
        rubric_sha256=rubric.file_sha256(),
        prompt_sha256=_sha256(judge_prompt_template(rubric)),
        model_sha256=_sha256(model_id),
        model_id=model_id,
    )


def calibration_path(rubric_path: Path) -> Path:
    """`rubrics/slop.yaml` → `rubrics/slop.calibration.json`."""
    return rubric_path.with_name(rubric_path.stem + CALIBRATION_SUFFIX)


@dataclass(frozen=True)
class Calibration:
    rubric: str
    kappa: float | None
    n: int
    observed: float | None
    chance: float | None
    confusion: Mapping[str, Mapping[str, int]]
    date: str
    fingerprint: Fingerprint
    malformed: int = 0
    errors: int = 0
    min_kappa: float | None = None

    @property
    def agreement(self) -> Agreement:
        return Agreement(self.n, self.observed, self.chance, self.kappa, self.confusion)

    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT_VERSION,
            "rubric": self.rubric,
            "kappa": self.kappa,
            "kappa_undefined": self.agreement.undefined_reason,
            "n": self.n,
            "observed_agreement": self.observed,
            "chance_agreement": self.chance,
            "confusion": {"rows": "label", "columns": "judge", **self.confusion},
            "malformed_judge_answers": self.malformed,
            "failed_judge_calls": self.errors,
            "min_kappa": self.min_kappa,
            "date": self.date,
            "sha256": {
                "rubric_file": self.fingerprint.rubric_sha256,
                "judge_prompt_template": self.fingerprint.prompt_sha256,
                "judge_model_id": self.fingerprint.model_sha256,
            },
            "judge_model_id": self.fingerprint.model_id,
        }


def write_calibration(path: Path, calibration: Calibration) -> None:
    """Write atomically, so a crash never leaves half a file that reads as calibrated."""
    text = json.dumps(calibration.to_json(), indent=2, ensure_ascii=False) + "\n"
    partial = path.with_name(path.name + ".partial")
    partial.write_text(text, encoding="utf-8")
    os.replace(partial, path)


def read_calibration(path: Path) -> Calibration | None:
    """The stored calibration, None when there is none; ConfigError when it is unreadable."""
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        hashes = data["sha256"]
        confusion = {a: {b: int(data["confusion"][a][b]) for b in LABELS} for a in LABELS}
        kappa = data["kappa"]
        return Calibration(
            rubric=str(data["rubric"]),
            kappa=None if kappa is None else float(kappa),
            n=int(data["n"]),
            observed=_optional_float(data.get("observed_agreement")),
            chance=_optional_float(data.get("chance_agreement")),
            confusion=confusion,
            date=str(data["date"]),
            fingerprint=Fingerprint(
                rubric_sha256=str(hashes["rubric_file"]),
                prompt_sha256=str(hashes["judge_prompt_template"]),
                model_sha256=str(hashes["judge_model_id"]),
                model_id=str(data.get("judge_model_id", "")),
            ),
            malformed=int(data.get("malformed_judge_answers", 0)),
            errors=int(data.get("failed_judge_calls", 0)),
            min_kappa=_optional_float(data.get("min_kappa")),
        )
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(
            f"{relpath(path)}: not a redline calibration file ({type(exc).__name__}: {exc}); "
            "delete it and run `redline calibrate` again"
        ) from None


def _optional_float(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


@dataclass(frozen=True)
class Trust:
    """Whether a judge's results may decide anything, and why (or why not)."""

    trusted: bool
    reason: str
    calibration: Calibration | None = None

    @property
    def label(self) -> str:
        return "trusted" if self.trusted else "advisory"

    def describe(self) -> str:
        return f"{self.label}: {self.reason}"


def judge_trust(rubric: Rubric, model: ModelRef) -> Trust:
    """Trusted only when calibrated, current, on enough varied labels, and at the bar."""
    path = calibration_path(rubric.path)
    command = f"redline calibrate --rubric {relpath(rubric.path)}"
    calibration = read_calibration(path)
    if calibration is None:
        return Trust(False, f"not calibrated (no {path.name}; label outputs, then `{command}`)")
    changed = fingerprint(rubric, model.id).changes_from(calibration.fingerprint)
    if changed:
        return Trust(
            False,
            f"calibration is stale: {', '.join(changed)} changed since {calibration.date}; "
            f"run `{command}`",
            calibration,
        )
    agreement = calibration.agreement
    passes, fails = agreement.label_count(PASS), agreement.label_count(FAIL)
    if calibration.n < MIN_LABELS:
        return Trust(
            False,
            f"too few labels: n {calibration.n} < {MIN_LABELS}; label more outputs",
            calibration,
        )
    if passes == 0 or fails == 0:
        only = PASS if fails == 0 else FAIL
        return Trust(
            False,
            f"degenerate labels: all {calibration.n} are '{only}', which cannot show that "
            "the judge tells pass from fail; label outputs of both kinds",
            calibration,
        )
    if calibration.kappa is None:
        return Trust(False, agreement.undefined_reason or "kappa undefined", calibration)
    if calibration.kappa < rubric.min_kappa:
        return Trust(
            False,
            f"kappa {calibration.kappa:.2f} < min_kappa {rubric.min_kappa:.2f} (n {calibration.n})",
            calibration,
        )
    return Trust(
        True,
        f"kappa {calibration.kappa:.2f} ≥ min_kappa {rubric.min_kappa:.2f} "
        f"(n {calibration.n}, {calibration.date})",
        calibration,
    )


@dataclass(frozen=True)
class CalibrationResult:
    calibration: Calibration
    judgements: Sequence[Judgement] = field(default_factory=tuple)


def judge_label(judgement: Judgement) -> str:
    """The judge's pass/fail for agreement: anything but a valid passing answer is `fail`."""
    return PASS if judgement.status is JudgeStatus.PASSED else FAIL


async def calibrate(
    rubric: Rubric,
    labels: Sequence[Label],
    provider: Provider,
    model: ModelRef,
    *,
    concurrency: int = DEFAULT_CONCURRENCY,
    today: datetime.date | None = None,
) -> CalibrationResult:
    """Judge every labelled output and measure agreement with the labels.

    A malformed or failed judge answer counts as the judge saying `fail`
    (it is never a pass) and is counted separately.
    """
    gate = asyncio.Semaphore(in_flight(provider, concurrency))
    ride_rate_limit(provider, concurrency)  # the judge's endpoint paces these calls

    async def one(label: Label) -> Judgement:
        async with gate:
            return await judge_output(provider, rubric, model, label.output, label.vars)

    judgements = await asyncio.gather(*(one(label) for label in labels))
    agreement = cohens_kappa(
        [PASS if label.passed else FAIL for label in labels],
        [judge_label(j) for j in judgements],
    )
    calibration = Calibration(
        rubric=rubric.name,
        kappa=agreement.kappa,
        n=agreement.n,
        observed=agreement.observed,
        chance=agreement.chance,
        confusion=agreement.confusion,
        date=(today or datetime.datetime.now(datetime.UTC).date()).isoformat(),
        fingerprint=fingerprint(rubric, model.id),
        malformed=sum(j.status is JudgeStatus.MALFORMED for j in judgements),
        errors=sum(j.status is JudgeStatus.ERROR for j in judgements),
        min_kappa=rubric.min_kappa,
    )
    return CalibrationResult(calibration, tuple(judgements))
