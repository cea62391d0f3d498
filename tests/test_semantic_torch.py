"""The `redline[torch]` backends with tiny models the tests build and save (no download).

Skipped unless torch, transformers and sentence-transformers are installed (the extra);
`.ci/run` installs them and sets REDLINE_REQUIRE_TORCH=1 so that they cannot skip there.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# Never reach a hub from tests: every model here is built and saved by the test itself.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

if os.environ.get("REDLINE_REQUIRE_TORCH"):
    # CI installs the extra: a missing package there must fail, not skip silently.
    torch = importlib.import_module("torch")
    transformers = importlib.import_module("transformers")
    sentence_transformers = importlib.import_module("sentence_transformers")
else:
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    sentence_transformers = pytest.importorskip("sentence_transformers")

from redline.assertions.semantic import grounding_check
from redline.semantic.embeddings import (
    BackendUnavailable,
    SentenceTransformersBackend,
    load_embeddings,
)
from redline.semantic.grounding import check_grounding
from redline.semantic.nli import NLIBackend, load_nli
from redline.semantic.scorer import semantic_scorer
from redline.semantic.settings import SemanticSettings
from redline.vocabulary.verdicts import AssertionStatus

WORDS = (
    *("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"),
    *("refunds", "are", "is", "not", "supported", "thank", "you", "for", "contacting", "us"),
    *("the", "store", ".", ",", "!", "order", "total"),
)
#: A label order that is not the usual one, with upper-case names: mapping must use the config.
ID2LABEL = {0: "CONTRADICTION", 1: "NEUTRAL", 2: "ENTAILMENT"}


def _tokenizer(folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(WORDS) + "\n", encoding="utf-8")
    return transformers.BertTokenizer(vocab_file=str(folder / "vocab.txt"))


def _bert_config(**extra: Any) -> Any:
    return transformers.BertConfig(
        vocab_size=len(WORDS),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        **extra,
    )


def _nli_model(folder: Path, favoured: int) -> Path:
    """A randomly initialised 3-label classifier whose bias makes label `favoured` win."""
    tokenizer = _tokenizer(folder)
    config = _bert_config(id2label=ID2LABEL, label2id={v: k for k, v in ID2LABEL.items()})
    torch.manual_seed(0)
    model = transformers.BertForSequenceClassification(config)
    with torch.no_grad():
        model.classifier.weight.zero_()
        bias = torch.zeros(3)
        bias[favoured] = 4.0
        model.classifier.bias.copy_(bias)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


@pytest.fixture(scope="module")
def contradiction_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _nli_model(tmp_path_factory.mktemp("nli-contradiction"), favoured=0)


@pytest.fixture(scope="module")
def entailment_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _nli_model(tmp_path_factory.mktemp("nli-entailment"), favoured=2)


class _Recording:
    """Wraps the real pipeline and keeps what it was called with."""

    def __init__(self, pipeline: Callable[..., Any]) -> None:
        self.pipeline = pipeline
        self.inputs: list[Any] = []

    def __call__(self, inputs: Any, **kwargs: Any) -> Any:
        self.inputs.extend(inputs)
        return self.pipeline(inputs, **kwargs)


def test_labels_come_from_the_model_config(contradiction_model: Path) -> None:
    backend = load_nli(str(contradiction_model))
    assert backend.labels == {
        "CONTRADICTION": "contradiction",
        "NEUTRAL": "neutral",
        "ENTAILMENT": "entailment",
    }
    [answer] = backend.entailments("Refunds are not supported.", ["Refunds are supported."])
    assert answer.label == "contradiction"
    assert answer.entailment < 0.1 and answer.scores["contradiction"] > 0.9


def test_grounded_in_sends_premise_and_hypothesis_as_a_pair(contradiction_model: Path) -> None:
    """Never a hand-built "premise [SEP] hypothesis" string (the seed's bug)."""
    backend = load_nli(str(contradiction_model))
    recording = _Recording(backend.pipeline)
    source = "Refunds are not supported."
    output = "Thank you for contacting us. Refunds are supported."
    report = check_grounding(
        output,
        source,
        entailer=NLIBackend(recording, ID2LABEL, backend.name),
        scorer=semantic_scorer(SemanticSettings()),
    )
    assert recording.inputs == [{"text": source, "text_pair": "Refunds are supported."}]
    assert [s.courtesy for s in report.sentences] == [True, False]
    [failing] = report.not_entailed
    assert failing.entailment is not None and failing.entailment.label == "contradiction"

    settings = SemanticSettings(nli_model=str(contradiction_model))
    check = grounding_check(output, source, settings, "nli")
    assert check.status is AssertionStatus.FAILED
    assert "'Refunds are supported.' is contradiction" in check.reason
    assert "1 courtesy sentence(s) not required to be entailed" in check.reason


def test_entailed_claims_pass(entailment_model: Path) -> None:
    settings = SemanticSettings(nli_model=str(entailment_model))
    check = grounding_check("The order total is 45.", "Order total: 45.", settings, "nli")
    assert check.status is AssertionStatus.PASSED
    assert check.score is not None and check.score > 0.9


def test_a_model_without_nli_labels_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    tokenizer = _tokenizer(folder)
    transformers.BertForSequenceClassification(_bert_config(num_labels=3)).save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    with pytest.raises(BackendUnavailable, match="expected names like entailment"):
        load_nli(str(folder))


def test_an_absent_model_is_unavailable_without_download(tmp_path: Path) -> None:
    with pytest.raises(BackendUnavailable, match="not available locally"):
        load_nli(str(tmp_path / "nowhere"))
    with pytest.raises(BackendUnavailable, match="not available locally"):
        SentenceTransformersBackend("redline-tests/never-published-model")


@pytest.fixture(scope="module")
def tiny_sentence_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("st")
    encoder = root / "encoder"
    tokenizer = _tokenizer(encoder)
    torch.manual_seed(1)
    transformers.BertModel(_bert_config()).save_pretrained(encoder)
    tokenizer.save_pretrained(encoder)
    modules = importlib.import_module("sentence_transformers.models")
    word = modules.Transformer(str(encoder))
    pooling = modules.Pooling(16)
    saved = root / "sentence-model"
    sentence_transformers.SentenceTransformer(modules=[word, pooling]).save(str(saved))
    return saved


def test_sentence_transformers_loads_a_local_model(tiny_sentence_model: Path) -> None:
    backend = SentenceTransformersBackend(str(tiny_sentence_model), query_prefix="query: ")
    vectors = backend.embed(["refunds are supported", "thank you"], "query")
    assert vectors.shape == (2, 16)
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    assert backend.name == f"sentence-transformers:{tiny_sentence_model}"


def test_an_untrained_embedding_model_cannot_judge_mentions(tiny_sentence_model: Path) -> None:
    settings = SemanticSettings(embeddings="sentence-transformers", model=str(tiny_sentence_model))
    assert load_embeddings(settings).name.startswith("sentence-transformers:")
    with pytest.raises(BackendUnavailable, match="cannot judge mentions"):
        semantic_scorer(settings)
