"""The one conclusion for a red case, with every number it rests on, and its progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from redline.deciding.arms import ArmCounts, ArmKind
from redline.deciding.changes import Change, ChangeItem
from redline.deciding.decision import Bar, History
from redline.deciding.reference import Reference
from redline.vocabulary.causes import Cause


@dataclass(frozen=True)
class Diagnosis:
    """The one conclusion for a red case, with every number it rests on."""

    cause: Cause
    sentence: str
    red_run: str
    suite: str
    case_id: str
    reference: Reference
    changes: tuple[ChangeItem, ...]
    arms: tuple[ArmCounts, ...]
    red: ArmCounts
    bar: Bar
    p_values: Mapping[str, float]
    confidence: float
    margin: float
    more_samples: int | None = None
    notes: tuple[str, ...] = ()
    stopped: bool = False
    budget: int = 0
    history: History = field(default_factory=History)
    #: What the provider says about itself changed between the stored history and the red
    #: run (its `model` field, system fingerprint or server version), in words; "" if not.
    provider_change: str = ""

    @property
    def progress(self) -> float:
        """How much of the most the arms could draw they drew."""
        sampled = [a for a in self.arms if a.skipped is None]
        most = sum(a.most or self.budget for a in sampled)
        if not most:
            return 1.0
        drawn = sum(a.drawn_counts[1] for a in sampled)
        return min(1.0, drawn / most)

    @property
    def change_kinds(self) -> list[str]:
        return list(dict.fromkeys(c.kind.value for c in self.changes))

    def to_json(self) -> dict[str, Any]:
        ref = self.reference
        return {
            "conclusion": self.cause.value,
            "sentence": self.sentence,
            "run_id": self.red_run,
            "suite": self.suite,
            "case": self.case_id,
            "reference": {
                "revision": ref.revision,
                "branch": ref.branch,
                "date": ref.date,
                "reason": ref.reason,
                "run_id": ref.run.id if ref.run is not None else None,
            },
            "changes": self.change_kinds,
            "change_details": [{"kind": c.kind.value, "detail": c.detail} for c in self.changes],
            "red_run": self.red.to_json(self.confidence),
            "arms": [a.to_json(self.confidence) for a in self.arms],
            "bar": {"samples": self.bar.samples, "required": self.bar.required},
            "p_values": {k: round(v, 6) for k, v in self.p_values.items()},
            "confidence": self.confidence,
            "margin": self.margin,
            "more_samples_per_arm": self.more_samples,
            "notes": list(self.notes),
            "stopped": self.stopped,
            "budget": self.budget,
            "history": _history_json(self.history),
            "provider_change": self.provider_change or None,
            "drift": self._drift_json(),
            "settings": self._settings_json(),
        }

    def _drift_json(self) -> dict[str, Any] | None:
        if self.cause is not Cause.DRIFT:
            return None
        passes, samples = self.history.before
        red_passes, red_samples = self.history.red_run
        return {
            "model": self.red.model_id,
            "stored_before": {"passes": passes, "samples": samples},
            "red_run": {"passes": red_passes, "samples": red_samples},
            "provider_change": self.provider_change or None,
        }

    def _settings_json(self) -> dict[str, Any] | None:
        old = self.history.old_bar
        if self.cause is not Cause.SETTINGS or old is None:
            return None
        arm = next((a for a in self.arms if a.kind is ArmKind.RED), self.red)
        return {
            "old_bar": {"samples": old.samples, "required": old.required},
            "bar": {"samples": self.bar.samples, "required": self.bar.required},
            "rate": round(arm.rate, 4),
            "passes": arm.passes,
            "samples": arm.samples,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Diagnosis:
        ref = data["reference"]
        return cls(
            cause=Cause(data["conclusion"]),
            sentence=str(data["sentence"]),
            red_run=str(data["run_id"]),
            suite=str(data["suite"]),
            case_id=str(data["case"]),
            reference=Reference(
                revision=str(ref["revision"]),
                branch=ref.get("branch"),
                date=str(ref.get("date", "")),
                reason=str(ref.get("reason", "")),
            ),
            changes=tuple(
                ChangeItem(Change(c["kind"]), str(c["detail"])) for c in data["change_details"]
            ),
            arms=tuple(ArmCounts.from_json(a) for a in data["arms"]),
            red=ArmCounts.from_json(data["red_run"]),
            bar=Bar(int(data["bar"]["samples"]), int(data["bar"]["required"])),
            p_values={str(k): float(v) for k, v in data["p_values"].items()},
            confidence=float(data["confidence"]),
            margin=float(data["margin"]),
            more_samples=data.get("more_samples_per_arm"),
            notes=tuple(data.get("notes", ())),
            stopped=bool(data.get("stopped", False)),
            budget=int(data.get("budget", 0)),
            history=_history_from_json(data.get("history") or {}),
            provider_change=str(data.get("provider_change") or ""),
        )


def _history_json(h: History) -> dict[str, Any]:
    old = h.old_bar
    return {
        "stored_before": list(h.before),
        "stored_runs_before": h.runs_before,
        "red_run": list(h.red_run),
        "nothing_changed": h.drift_possible,
        "old_bar": None if old is None else {"samples": old.samples, "required": old.required},
    }


def _history_from_json(data: Mapping[str, Any]) -> History:
    before = data.get("stored_before") or (0, 0)
    red_run = data.get("red_run") or (0, 0)
    old = data.get("old_bar")
    return History(
        before=(int(before[0]), int(before[1])),
        runs_before=int(data.get("stored_runs_before", 0)),
        red_run=(int(red_run[0]), int(red_run[1])),
        drift_possible=bool(data.get("nothing_changed", False)),
        old_bar=None if not old else Bar(int(old["samples"]), int(old["required"])),
    )


@dataclass(frozen=True)
class CauseProgress:
    """A snapshot while the arms are sampled: every arm's counts so far."""

    arms: tuple[ArmCounts, ...]
    done: int
    total: int
    message: str = ""

    @property
    def fraction(self) -> float:
        return self.done / self.total if self.total else 0.0


ProgressCallback = Callable[[CauseProgress], None]
