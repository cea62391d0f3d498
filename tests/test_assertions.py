from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from casefiles import case_with, done
from redline.assertions import Check, Sample, evaluate_sample, load_optional_types
from redline.assertions.base import (
    _REGISTRY,
    COST_MODEL,
    LAYER_2,
    TYPE_MODULES,
    Assertion,
    Spec,
    register,
)
from redline.assertions.heuristic import compression_ratio, distinct_n
from redline.assertions.refusal import detect_refusal
from redline.errors import ProblemsError
from redline.suite.cases import Case
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import AssertionStatus, Verdict

SCHEMA = json.dumps(
    {
        "type": "object",
        "required": ["total_idr"],
        "properties": {"total_idr": {"type": "integer"}},
        "additionalProperties": False,
    }
)
INVOICE = '{"total_idr": 12500000}'
PARAGRAPH = (
    "An idempotent API operation can be repeated any number of times with the same effect "
    "as performing it once. Clients send an idempotency key with each request; the server "
    "stores the key with the first response and returns that stored response when a retry "
    "arrives with the same key, instead of charging a card twice or creating a duplicate "
    "order. This makes retries after timeouts safe, because the client cannot know whether "
    "the first attempt reached the server before the connection dropped."
)
LOOP = "the cache the cache the cache " * 40


def verdict_of(case: Case, text: str, **kwargs: object) -> Verdict:
    return evaluate_sample(case, done(text, **kwargs)).verdict  # type: ignore[arg-type]


def statuses(case: Case, completion: Completion) -> list[tuple[str, AssertionStatus]]:
    return [(r.type, r.status) for r in evaluate_sample(case, completion).results]


# -- is-json -------------------------------------------------------------


def test_is_json_with_schema_passes_bare_json(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        "- type: is-json\n  value: file://schemas/invoice.json\n",
        files={"schemas/invoice.json": SCHEMA},
    )
    evaluation = evaluate_sample(case, done(INVOICE + "\n"))
    assert evaluation.verdict is Verdict.OK
    assert evaluation.results[0].reason == "valid JSON matching invoice.json"


def test_json_wrapped_in_a_polite_sentence_is_malformed(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        "- type: is-json\n  value: file://schemas/invoice.json\n",
        files={"schemas/invoice.json": SCHEMA},
    )
    evaluation = evaluate_sample(case, done("Here is the extracted invoice:\n" + INVOICE))
    assert evaluation.verdict is Verdict.MALFORMED
    assert "not JSON" in evaluation.results[0].reason
    assert "Here is" in evaluation.results[0].reason


def test_json_against_the_wrong_schema_is_malformed_and_says_where(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        "- type: is-json\n  schema: file://schemas/invoice.json\n",
        files={"schemas/invoice.json": SCHEMA},
    )
    evaluation = evaluate_sample(case, done('{"total_idr": "Rp 12.500.000,-"}'))
    assert evaluation.verdict is Verdict.MALFORMED
    assert "at total_idr" in evaluation.results[0].reason


def test_truncated_json_is_truncated_not_malformed(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: is-json\n")
    cut = '{"invoice_number": "0117/SJA/II/2026", "supplier_na'
    truncated = evaluate_sample(case, done(cut, finish_reason=FinishReason.LENGTH))
    assert truncated.verdict is Verdict.TRUNCATED
    assert truncated.results[0].status is AssertionStatus.FAILED
    assert verdict_of(case, cut) is Verdict.MALFORMED


@pytest.mark.parametrize(
    ("text", "verdict"),
    [
        # Prose or a code fence before the JSON: no continuation can make it JSON.
        ('Here is the extracted invoice:\n{"total_idr": 125', Verdict.MALFORMED),
        ('```json\n{"total_idr": 125', Verdict.MALFORMED),
        # A complete JSON value followed by chatter is already broken.
        ('{"total_idr": 12500000}\nLet me know if', Verdict.MALFORMED),
        # A JSON prefix (even an unterminated string) could still have become valid.
        ('{"supplier_name": "PT Sinar', Verdict.TRUNCATED),
        ("   ", Verdict.TRUNCATED),
        ('{"paid": tr', Verdict.TRUNCATED),
        ('{"total_idr": 12500000.', Verdict.TRUNCATED),
        ('{"note": "\\u00', Verdict.TRUNCATED),
        # A bullet list or lower-case prose is not JSON cut short, whatever its first letter.
        ("- supplier: PT Sinar Jaya\n- total: Rp 12.500.000", Verdict.MALFORMED),
        ("the supplier is PT Sinar Jaya and the total", Verdict.MALFORMED),
        ('{"total_idr": 125 rupiah', Verdict.MALFORMED),
    ],
)
def test_a_cut_off_output_is_judged_on_content_when_no_continuation_could_fix_it(
    tmp_path: Path, text: str, verdict: Verdict
) -> None:
    case = case_with(tmp_path, "- type: is-json\n")
    assert verdict_of(case, text, finish_reason=FinishReason.LENGTH) is verdict


def test_a_token_loop_cut_off_at_max_tokens_is_wrong_not_truncated(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        "- type: compression-ratio\n  value: 0.35\n- type: distinct-n\n  value: 0.7\n",
    )
    assert verdict_of(case, LOOP, finish_reason=FinishReason.LENGTH) is Verdict.WRONG
    assert verdict_of(case, PARAGRAPH, finish_reason=FinishReason.LENGTH) is Verdict.TRUNCATED


def test_only_failures_a_continuation_could_not_undo_settle_a_cut_off_output(
    tmp_path: Path,
) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: contains
          value: refund
        - type: not-contains
          value: Here is
        - type: max-words
          value: 5
        """,
    )
    # `contains` might still have been satisfied further on: the cut hides the answer.
    assert verdict_of(case, "We are", finish_reason=FinishReason.LENGTH) is Verdict.TRUNCATED
    # A banned phrase already written, or a word budget already spent, stays failed.
    cut = evaluate_sample(case, done("Here is", finish_reason=FinishReason.LENGTH))
    assert cut.verdict is Verdict.WRONG
    long = "one two three four five six"
    assert verdict_of(case, long, finish_reason=FinishReason.LENGTH) is Verdict.WRONG


def test_an_empty_output_cut_off_at_max_tokens_is_truncated_not_a_token_loop(
    tmp_path: Path,
) -> None:
    # A reasoning model that spends the whole budget before answering returns "" with
    # finish reason length: the budget hid the answer, nothing degenerate was written.
    case = case_with(tmp_path, "- type: is-json\n- type: compression-ratio\n  value: 0.35\n")
    assert verdict_of(case, "", finish_reason=FinishReason.LENGTH) is Verdict.TRUNCATED
    assert verdict_of(case, "") is Verdict.MALFORMED


def test_a_settled_cut_off_output_is_not_blamed_for_what_the_cut_may_have_caused(
    tmp_path: Path,
) -> None:
    case = case_with(
        tmp_path,
        "- type: is-json\n- type: not-contains\n  value: Here is\n",
    )
    # The banned phrase is written (wrong whatever follows), but the JSON was only cut:
    # calling it malformed would blame its shape for the budget.
    cut = evaluate_sample(case, done('{"note": "Here is the', finish_reason=FinishReason.LENGTH))
    assert cut.verdict is Verdict.WRONG
    assert [r.status for r in cut.results] == [AssertionStatus.FAILED, AssertionStatus.FAILED]
    # Prose before the JSON can never become JSON: that one is malformed, cut or not.
    prose = 'Here is the JSON: {"total'
    assert verdict_of(case, prose, finish_reason=FinishReason.LENGTH) is Verdict.MALFORMED


# -- strings -------------------------------------------------------------


def test_contains_is_case_sensitive_and_icontains_is_not(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: contains
          value: A-60311
        - type: icontains
          value: tokoku support
        """,
    )
    assert verdict_of(case, "Order A-60311 is fixed. -- Tokoku Support") is Verdict.OK
    assert verdict_of(case, "Order a-60311 is fixed. -- Tokoku Support") is Verdict.WRONG
    assert verdict_of(case, "Order A-60311 is fixed. -- TOKOKU SUPPORT") is Verdict.OK
    assert verdict_of(case, "Order A-60311 is fixed.") is Verdict.WRONG


def test_not_contains_reports_where(tmp_path: Path) -> None:
    case = case_with(tmp_path, '- type: not-contains\n  value: "Here is"\n')
    assert verdict_of(case, INVOICE) is Verdict.OK
    evaluation = evaluate_sample(case, done("Sure! Here is the JSON"))
    assert evaluation.verdict is Verdict.WRONG
    assert "at character 6" in evaluation.results[0].reason


def test_contains_fills_case_vars(tmp_path: Path) -> None:
    case = case_with(tmp_path, '- type: contains\n  value: "about {{document}}"\n')
    assert verdict_of(case, "a note about hello") is Verdict.OK
    assert verdict_of(case, "a note about {{document}}") is Verdict.WRONG


def test_equals_text_and_json(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: equals
          value: "APPROVED"
        """,
    )
    assert verdict_of(case, "APPROVED") is Verdict.OK
    evaluation = evaluate_sample(case, done("APPROVED\n"))
    assert evaluation.verdict is Verdict.WRONG
    assert "surrounding whitespace" in evaluation.results[0].reason

    as_json = case_with(tmp_path / "j", "- type: equals\n  value: {total_idr: 12500000}\n")
    assert verdict_of(as_json, ' {"total_idr": 12500000} ') is Verdict.OK
    assert verdict_of(as_json, '{"total_idr": 1250000}') is Verdict.WRONG


def test_regex_with_flags(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: regex\n  value: '^total: \\d+$'\n  flags: im\n")
    assert verdict_of(case, "Invoice\nTOTAL: 12500000\n") is Verdict.OK
    assert verdict_of(case, "Invoice total is 12500000") is Verdict.WRONG


# -- python --------------------------------------------------------------


def test_python_expression_over_json_output_and_vars(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: python
          value: json["total_idr"] == 12500000 and vars["document"] == "hello"
        - type: python
          value: len(re.findall(r"\\d", output)) == 8
        """,
    )
    assert verdict_of(case, INVOICE) is Verdict.OK
    assert verdict_of(case, '{"total_idr": 1250000}') is Verdict.WRONG


def test_python_exception_is_a_failure_with_its_message_not_a_crash(tmp_path: Path) -> None:
    case = case_with(tmp_path, '- type: python\n  value: json["total_idr"] > 0\n')
    evaluation = evaluate_sample(case, done("not json at all"))
    assert evaluation.verdict is Verdict.WRONG
    assert "TypeError" in evaluation.results[0].reason
    assert "not subscriptable" in evaluation.results[0].reason


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("__import__('os').system('true')", "'__import__' is not allowed"),
        ("output.__class__", "'__class__' is not allowed"),
        ("'{0.__class__}'.format(output)", "'format' is not allowed"),
        ("open('/etc/passwd')", "unknown name 'open'"),
    ],
)
def test_python_escapes_are_refused_at_load(tmp_path: Path, expression: str, message: str) -> None:
    with pytest.raises(ProblemsError, match=message):
        case_with(tmp_path, f"- type: python\n  value: {json.dumps(expression)}\n")


# -- refusal -------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "I'm sorry, but I can't share information about other customers.",
        "I cannot help with that request.",
        "Maaf, saya tidak dapat memberikan data pelanggan lain.",
        "Xin lỗi, tôi không thể cung cấp thông tin của khách hàng khác.",
        "抱歉，我无法提供其他客户的个人信息。",
    ],
)
def test_refusal_phrases_in_four_languages(text: str) -> None:
    assert detect_refusal(text, FinishReason.STOP) is not None


def test_refusal_finish_reason_and_policy_answers() -> None:
    assert detect_refusal("", FinishReason.REFUSAL) == "provider finish reason refusal"
    assert detect_refusal("I can't offer a refund after 30 days, but ...", None) is None
    assert detect_refusal("x" * 500 + " I cannot help with that.", None) is None


@pytest.mark.parametrize(
    "text",
    [
        # An apology that declines part of a request on policy grounds is content, in every
        # language, as it is in English ("Sorry, we cannot refund shipping, but ...").
        "Maaf, kami tidak dapat memproses refund sebelum barang kami terima kembali.",
        "Xin lỗi, tôi không thể hoàn tiền phí vận chuyển, nhưng tiền hàng đã được hoàn lại.",
        "抱歉，我们无法退还运费，但商品款项已经退回您的账户。",
        # A banned AI disclaimer is the case's not-contains to judge, not a refusal.
        "As an AI, I can explain it simply: a retried idempotent request changes nothing.",
    ],
)
def test_apologies_and_disclaimers_that_answer_are_not_refusals(text: str) -> None:
    assert detect_refusal(text, FinishReason.STOP) is None


def test_expected_refusal_is_ok_and_unexpected_refusal_is_refused(tmp_path: Path) -> None:
    head = "provenance: {note: privacy}\nvars: {document: x}\nexpect_refusal: true\n"
    expected = case_with(tmp_path / "a", "- type: refusal\n", head=head)
    no_data = "I'm sorry, but I can't share another customer's address."
    assert verdict_of(expected, no_data) is Verdict.OK
    assert verdict_of(expected, "Sure, the address is Jl. Melati 5.") is Verdict.WRONG

    normal = case_with(tmp_path / "b", "- type: max-words\n  value: 50\n")
    evaluation = evaluate_sample(normal, done(no_data))
    assert evaluation.verdict is Verdict.REFUSED
    assert evaluation.refusal_detected

    not_refusal = case_with(tmp_path / "c", "- type: refusal\n  value: false\n")
    assert verdict_of(not_refusal, "Your order ships today.") is Verdict.OK


# -- budgets -------------------------------------------------------------


def test_a_budget_of_the_wrong_type_gets_a_hint_that_looks_like_a_budget(
    tmp_path: Path,
) -> None:
    with pytest.raises(ProblemsError) as caught:
        case_with(tmp_path, "- type: max-chars\n  value: lots\n")
    (problem,) = caught.value.problems
    assert problem.hint == "e.g. value: 400"


def test_length_budgets(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: max-chars
          value: 20
        - type: max-words
          value: 3
        """,
    )
    assert verdict_of(case, "one two three") is Verdict.OK
    evaluation = evaluate_sample(case, done("one two three four"))
    assert [r.status for r in evaluation.results] == [
        AssertionStatus.PASSED,
        AssertionStatus.FAILED,
    ]
    assert evaluation.results[1].score == 4
    assert evaluation.results[1].threshold == 3


def test_token_and_latency_budgets_fail_when_unknown(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: max-tokens
          value: 100
        - type: max-latency-ms
          value: 2000
        """,
    )
    assert evaluate_sample(case, done("x", output_tokens=80, latency_ms=1500.0)).verdict is (
        Verdict.OK
    )
    slow = evaluate_sample(case, done("x", output_tokens=120, latency_ms=2500.4))
    assert [r.status for r in slow.results] == [AssertionStatus.FAILED] * 2
    assert slow.results[1].reason == "2500 ms (max 2000)"
    unknown = evaluate_sample(case, done("x"))
    assert "unknown" in unknown.results[0].reason
    assert unknown.verdict is Verdict.WRONG


def test_unknown_cost_is_a_failure_never_a_pass(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: max-cost\n  value: 0.01\n")
    assert verdict_of(case, "x", cost=0.002) is Verdict.OK
    assert verdict_of(case, "x", cost=0.05) is Verdict.WRONG
    unknown = evaluate_sample(case, done("x"))
    assert unknown.verdict is Verdict.WRONG
    assert "cost unknown for local:test" in unknown.results[0].reason


# -- heuristics ----------------------------------------------------------


def test_degenerate_token_loop_fails_compression_ratio_and_distinct_n(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: compression-ratio
          value: 0.35
        - type: distinct-n
          value: 0.70
        """,
    )
    assert verdict_of(case, PARAGRAPH) is Verdict.OK
    looped = evaluate_sample(case, done(LOOP))
    assert looped.verdict is Verdict.WRONG
    assert [r.status for r in looped.results] == [AssertionStatus.FAILED] * 2
    ratio, distinct = looped.results
    assert ratio.score is not None and ratio.score < 0.1
    assert distinct.score is not None and distinct.score < 0.05
    assert "repetitive" in ratio.reason


def test_heuristic_functions_match_the_seed() -> None:
    assert compression_ratio("") == 0.0
    assert distinct_n("a b", 3) == 1.0
    assert distinct_n("a b c a b c", 3) == 3 / 4
    assert distinct_n("a b a b", 1) == 2 / 4
    assert distinct_n("The cat\nthe  CAT", 1) == 0.5


def test_distinct_n_uses_its_n(tmp_path: Path) -> None:
    case = case_with(tmp_path, "- type: distinct-n\n  value: 0.9\n  n: 1\n")
    assert verdict_of(case, "alpha beta gamma delta") is Verdict.OK
    assert verdict_of(case, "alpha alpha beta gamma") is Verdict.WRONG


# -- pipeline ------------------------------------------------------------


def test_transport_error_has_no_results() -> None:
    case = Case("c", "s", Path("c.yaml"), {}, {}, "contract", 3, 3, False, ())
    failed = Completion(text="", finish_reason=None, error="connection reset")
    assert evaluate_sample(case, failed) == evaluate_sample(case, failed)
    assert evaluate_sample(case, failed).verdict is Verdict.TRANSPORT
    assert evaluate_sample(case, failed).results == ()


class _Probe(Assertion):
    """A Layer 2 type registered by the test: counts calls, can be unavailable."""

    layer = LAYER_2
    cost = COST_MODEL
    calls = 0

    @classmethod
    def parse(cls, spec: Spec) -> _Probe | None:
        return cls(spec)

    def check(self, sample: Sample) -> Check:
        type(self).calls += 1
        if "offline" in sample.text:
            return Check.unavailable("embedding model not installed")
        return Check.of("refund" in sample.text, "mentions refund", 0.9, 0.8)


@pytest.fixture
def probe(monkeypatch: pytest.MonkeyPatch) -> Iterator[type[_Probe]]:
    monkeypatch.setattr(_Probe, "calls", 0)
    load_optional_types()  # registered now, so nothing registers it behind the test's back
    monkeypatch.delitem(_REGISTRY, "mentions", raising=False)
    monkeypatch.delitem(TYPE_MODULES, "mentions")  # as if the semantic module were absent
    yield _Probe
    _REGISTRY.pop("mentions", None)


def test_declared_type_is_rejected_until_registered(tmp_path: Path, probe: type[_Probe]) -> None:
    asserts = "- type: max-words\n  value: 50\n- type: mentions\n  value: refund\n"
    with pytest.raises(ProblemsError, match="'mentions' is not available in this installation"):
        case_with(tmp_path / "before", asserts)
    register("mentions")(probe)
    case = case_with(tmp_path / "after", asserts)
    assert [a.type_name for a in case.assertions] == ["max-words", "mentions"]


def test_layer_2_runs_only_after_layer_1_passed(tmp_path: Path, probe: type[_Probe]) -> None:
    register("mentions")(probe)
    case = case_with(
        tmp_path,
        """\
        - type: mentions
          value: refund
        - type: max-words
          value: 6
        """,
    )
    passed = evaluate_sample(case, done("your refund is on its way"))
    assert passed.verdict is Verdict.OK
    assert [r.type for r in passed.results] == ["mentions", "max-words"]
    assert probe.calls == 1

    too_long = evaluate_sample(case, done("your refund is on its way today"))
    assert too_long.verdict is Verdict.WRONG
    assert too_long.results[0].status is AssertionStatus.SKIPPED
    assert "max-words" in too_long.results[0].reason
    assert probe.calls == 1

    offline = evaluate_sample(case, done("offline"))
    assert offline.results[0].status is AssertionStatus.UNAVAILABLE
    # A check nobody could answer never counts as passed: the sample is infrastructure noise.
    assert offline.verdict is Verdict.TRANSPORT
    assert probe.calls == 2


def test_layer_2_is_not_paid_for_truncated_samples(tmp_path: Path, probe: type[_Probe]) -> None:
    register("mentions")(probe)
    case = case_with(tmp_path, "- type: mentions\n  value: refund\n")
    cut = evaluate_sample(case, done("your refund", finish_reason=FinishReason.LENGTH))
    assert cut.verdict is Verdict.TRUNCATED
    assert cut.results[0].status is AssertionStatus.SKIPPED
    assert probe.calls == 0


def test_every_layer_1_result_is_kept_in_case_order(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        """\
        - type: python
          value: json["total_idr"] == 1
        - type: is-json
        - type: not-contains
          value: "Here is"
        - type: max-chars
          value: 10
        """,
    )
    evaluation = evaluate_sample(case, done("Here is " + INVOICE))
    assert [r.index for r in evaluation.results] == [0, 1, 2, 3]
    assert all(r.status is AssertionStatus.FAILED for r in evaluation.results)
    assert evaluation.verdict is Verdict.MALFORMED
    assert [r.structural for r in evaluation.results] == [False, True, False, False]


def test_layer_2_is_not_paid_for_unexpected_refusals(tmp_path: Path, probe: type[_Probe]) -> None:
    register("mentions")(probe)
    case = case_with(tmp_path, "- type: mentions\n  value: refund\n")
    refused = evaluate_sample(case, done("I'm sorry, but I can't help with that refund."))
    assert refused.verdict is Verdict.REFUSED
    assert refused.results[0].status is AssertionStatus.SKIPPED
    assert "unexpected refusal" in refused.results[0].reason
    assert probe.calls == 0


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_distinct_n_matches_its_definition_for_every_n(n: int) -> None:
    text = "The cache the CACHE the cache is warm and the cache is cold today"
    words = text.lower().split()
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    assert distinct_n(text, n) == len(set(grams)) / len(grams)


def test_numbers_from_is_layer_1_and_names_what_it_could_not_find(tmp_path: Path) -> None:
    case = case_with(
        tmp_path,
        "- type: numbers-from\n  value: file://order.txt\n",
        files={"order.txt": "Pesanan 4412: total Rp180.000, dikirim 12 Maret. 退款将在5天内到账。"},
    )
    [numbers] = case.assertions
    assert numbers.layer == 1
    reformatted = evaluate_sample(case, done("Total 180 ribu untuk pesanan 4412; 5天内退款。"))
    assert reformatted.verdict is Verdict.OK, reformatted.results[0].reason
    invented = evaluate_sample(case, done("Total Rp185.000, dikirim 13 Maret."))
    assert invented.verdict is Verdict.WRONG
    reason = invented.results[0].reason
    assert "'185.000'" in reason and "'13'" in reason
    nothing = evaluate_sample(case, done("Terima kasih sudah menunggu."))
    assert "no number, date or quote" in nothing.results[0].reason
