"""Natural-language inference for grounded-in: does the source entail each sentence?

A `transformers` text-classification pipeline is called with
`{"text": premise, "text_pair": hypothesis}` so the tokenizer builds the pair
with the model's own separators (a hand-built "premise [SEP] hypothesis"
string is wrong for DeBERTa-style tokenizers and flips entailments). Label
names come from the model config's `id2label`. Models load from a local path
or the local Hugging Face cache only; nothing is downloaded.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from redline.semantic.embeddings import BackendUnavailable
from redline.text.sentences import split_sentences

ENTAILMENT = "entailment"
NEUTRAL = "neutral"
CONTRADICTION = "contradiction"
#: A source longer than this is checked in overlapping windows of sentences.
_WINDOW_CHARS = 1200

Pipeline = Callable[..., Any]


@dataclass(frozen=True)
class Entailment:
    """The NLI answer for one hypothesis: its label and the entailment probability."""

    hypothesis: str
    label: str
    entailment: float
    scores: Mapping[str, float]
    #: The part of the source the answer rests on, when the backend quotes one.
    span: str = ""


def canonical_label(name: str) -> str | None:
    """entailment / neutral / contradiction from a model's own label name, else None."""
    lowered = name.strip().lower().replace("-", "_")
    if lowered in {"not_entailment", "non_entailment", "not_entailed"}:
        return NEUTRAL
    if lowered.startswith("entail"):
        return ENTAILMENT
    if lowered.startswith("contradict"):
        return CONTRADICTION
    if lowered.startswith("neutral"):
        return NEUTRAL
    return None


class NLIBackend:
    """An NLI pipeline with its labels mapped from the model config."""

    def __init__(self, pipeline: Pipeline, id2label: Mapping[int, str], name: str) -> None:
        self.pipeline = pipeline
        self.name = name
        self.labels = {label: canonical_label(label) for label in id2label.values()}
        unknown = sorted(label for label, canon in self.labels.items() if canon is None)
        if unknown or ENTAILMENT not in self.labels.values():
            raise BackendUnavailable(
                f"NLI model {name!r} has labels {sorted(self.labels)} in its config; "
                "expected names like entailment / neutral / contradiction"
            )
        self._lock = threading.Lock()

    def entailments(self, premise: str, hypotheses: Sequence[str]) -> list[Entailment]:
        """Per hypothesis, the best answer over the premise's windows (long sources are split)."""
        if not hypotheses:
            return []
        windows = _windows(premise)
        inputs = [{"text": w, "text_pair": h} for h in hypotheses for w in windows]
        with self._lock:
            answers = self.pipeline(inputs, top_k=None, truncation=True)
        results: list[Entailment] = []
        for i, hypothesis in enumerate(hypotheses):
            per_window = [self._scores(answers[i * len(windows) + j]) for j in range(len(windows))]
            best = max(per_window, key=lambda scores: scores.get(ENTAILMENT, 0.0))
            label = max(best, key=lambda key: best[key])
            results.append(Entailment(hypothesis, label, best.get(ENTAILMENT, 0.0), best))
        return results

    def _scores(self, answer: Any) -> dict[str, float]:
        items = answer if isinstance(answer, list) else [answer]
        scores: dict[str, float] = {}
        for item in items:
            canon = self.labels.get(str(item["label"]))
            if canon is not None:
                scores[canon] = scores.get(canon, 0.0) + float(item["score"])
        return scores


def _windows(premise: str) -> list[str]:
    if len(premise) <= _WINDOW_CHARS:
        return [premise]
    sentences = split_sentences(premise)
    windows: list[str] = []
    start = 0
    while start < len(sentences):
        end = start
        size = 0
        while end < len(sentences) and (
            end == start or size + len(sentences[end]) <= _WINDOW_CHARS
        ):
            size += len(sentences[end]) + 1
            end += 1
        windows.append(" ".join(sentences[start:end]))
        if end >= len(sentences):
            break
        start = max(start + 1, (start + end) // 2)
    return windows


_LOADED: dict[str, NLIBackend] = {}
_FAILED: dict[str, str] = {}
_LOCK = threading.Lock()


def load_nli(model: str) -> NLIBackend:
    """The process-wide NLI backend for a model id or path; BackendUnavailable when missing."""
    with _LOCK:
        if model in _LOADED:
            return _LOADED[model]
        if model in _FAILED:
            raise BackendUnavailable(_FAILED[model])
        try:
            backend = _load(model)
        except BackendUnavailable as exc:
            _FAILED[model] = str(exc)
            raise
        _LOADED[model] = backend
        return backend


def _load(model: str) -> NLIBackend:
    try:
        transformers = importlib.import_module("transformers")
    except ImportError as exc:
        raise BackendUnavailable(
            f"transformers is not installed ({exc}); grounded-in's entailment check needs the "
            "extra: pip install 'redline[torch]'"
        ) from None
    try:
        tokenizer = transformers.AutoTokenizer.from_pretrained(model, local_files_only=True)
        classifier = transformers.AutoModelForSequenceClassification.from_pretrained(
            model, local_files_only=True
        )
    except Exception as exc:  # any loader failure means "not available here", with why
        raise BackendUnavailable(
            f"NLI model {model!r} is not available locally (redline never downloads models; "
            f"put it in the Hugging Face cache or set [tool.redline.semantic] nli_model to a "
            f"local path): {type(exc).__name__}: {exc}"
        ) from None
    classifier.eval()
    pipe = transformers.pipeline(
        "text-classification", model=classifier, tokenizer=tokenizer, device="cpu"
    )
    id2label = {int(k): str(v) for k, v in classifier.config.id2label.items()}
    return NLIBackend(pipe, id2label, model)


def forget_loaded() -> None:
    """Drop loaded NLI models (tests that load several in one process)."""
    with _LOCK:
        _LOADED.clear()
        _FAILED.clear()
