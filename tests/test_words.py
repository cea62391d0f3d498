"""Word counts in every script: max-words and distinct-n on Chinese, Japanese, Thai,
Indonesian and Vietnamese loops and budgets."""

from __future__ import annotations

from pathlib import Path

import pytest

from casefiles import case_with, done
from redline.assertions import evaluate_sample
from redline.assertions.heuristic import distinct_n
from redline.text.words import words
from redline.vocabulary.verdicts import AssertionStatus, Verdict

#: Natural answers (no loop) and a phrase each that a degenerate model repeats.
ANSWERS = {
    "zh": (
        "您好，感谢您的耐心等待。您的订单已经在昨天下午发出，预计三到五个工作日内送达。"
        "如果包裹在运输途中损坏，请拍照并在七天内联系我们，我们会为您安排换货或者退款。",
        "我们会尽快处理您的请求",
    ),
    "ja": (
        "お問い合わせありがとうございます。ご注文の商品は昨日発送されました。"
        "到着まで三日から五日ほどかかります。破損していた場合は写真を添えてご連絡ください。",
        "ご迷惑をおかけして申し訳ございません",
    ),
    "th": (
        "ขอบคุณที่ติดต่อเรา คำสั่งซื้อของคุณถูกจัดส่งเมื่อวานนี้ "
        "และจะถึงภายในสามถึงห้าวันทำการ หากสินค้าเสียหายกรุณาถ่ายรูปแล้วแจ้งเรา",
        "เรากำลังดำเนินการให้คุณ",
    ),
    "id": (
        "Terima kasih sudah menghubungi kami. Pesanan Anda sudah dikirim kemarin sore dan "
        "akan tiba dalam tiga sampai lima hari kerja. Jika paket rusak, kirimkan foto dalam "
        "tujuh hari dan kami akan mengganti barang atau mengembalikan dana Anda.",
        "kami akan segera memproses permintaan Anda",
    ),
    "vi": (
        "Cảm ơn bạn đã liên hệ với chúng tôi. Đơn hàng của bạn đã được gửi chiều hôm qua và "
        "sẽ đến trong ba đến năm ngày làm việc. Nếu gói hàng bị hỏng, vui lòng gửi ảnh trong "
        "bảy ngày để chúng tôi đổi hàng hoặc hoàn tiền.",
        "chúng tôi sẽ xử lý yêu cầu của bạn ngay",
    ),
}


def test_each_cjk_and_thai_character_is_a_word_and_punctuation_is_not() -> None:
    assert words("我们无法提供退款。请联系客服！") == list("我们无法提供退款请联系客服")
    assert words("返品は30日以内です。") == ["返", "品", "は", "30", "日", "以", "内", "で", "す"]
    # A Thai letter keeps its vowel and tone marks: ที่ is one word, not three.
    assert words("ที่นี่") == ["ที่", "นี่"]
    assert words("Tổng cộng Rp180.000, cảm ơn.") == ["Tổng", "cộng", "Rp180.000,", "cảm", "ơn."]
    assert words("price 3.50 USD\nthanks") == ["price", "3.50", "USD", "thanks"]
    assert words("订单 order 123号") == ["订", "单", "order", "123", "号"]


@pytest.mark.parametrize("lang", sorted(ANSWERS))
def test_a_looping_answer_fails_distinct_n_in_every_script(tmp_path: Path, lang: str) -> None:
    answer, phrase = ANSWERS[lang]
    loop = answer + " " + " ".join([phrase] * 40)
    case = case_with(tmp_path, "- type: distinct-n\n  value: 0.7\n")
    looped = evaluate_sample(case, done(loop))
    assert looped.verdict is Verdict.WRONG
    assert looped.results[0].score is not None and looped.results[0].score < 0.3
    natural = evaluate_sample(case, done(answer))
    assert natural.verdict is Verdict.OK, natural.results[0].reason


@pytest.mark.parametrize(
    ("lang", "budget"), [("zh", 150), ("ja", 150), ("th", 150), ("id", 60), ("vi", 60)]
)
def test_a_long_answer_fails_max_words_in_every_script(
    tmp_path: Path, lang: str, budget: int
) -> None:
    answer, _ = ANSWERS[lang]
    case = case_with(tmp_path, f"- type: max-words\n  value: {budget}\n")
    short = evaluate_sample(case, done(answer))
    assert short.verdict is Verdict.OK, short.results[0].reason
    long = evaluate_sample(case, done(" ".join([answer] * 4)))
    result = long.results[0]
    assert result.status is AssertionStatus.FAILED
    assert result.score is not None and result.score > budget
    assert "words" in result.reason


def test_a_500_character_chinese_answer_fails_max_words_150(tmp_path: Path) -> None:
    text = ("您的退款申请已经受理，款项将在七个工作日内退回原支付账户。" * 20)[:500]
    case = case_with(tmp_path, "- type: max-words\n  value: 150\n")
    result = evaluate_sample(case, done(text)).results[0]
    assert result.status is AssertionStatus.FAILED
    assert result.score is not None and result.score > 400


def test_distinct_n_on_a_chinese_phrase_loop_matches_an_english_one() -> None:
    chinese = distinct_n("我们会尽快处理您的请求" * 40)
    english = distinct_n("we will process your request shortly " * 40)
    assert chinese < 0.05 and english < 0.05
