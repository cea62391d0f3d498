"""assert_behavior / check_behavior: the chain a pytest user writes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline import assert_behavior, check_behavior
from redline.suite.behavior import BehaviorUnavailable
from redline.vocabulary.verdicts import AssertionStatus

REPLY = (
    "We are truly sorry for the delay with order 4412. "
    "Your refund of $45 has been issued to your card and arrives within 5 days."
)
POLICY = "Order 4412: total $45.00. Refunds reach the card within 5 days."


def test_a_passing_chain_returns_itself_at_every_step() -> None:
    chain = assert_behavior(REPLY)
    assert chain.mentions("refund") is chain
    chain.not_mentions("password reset").tone("apologetic").max_words(40).not_degenerate()
    chain.numbers_from(POLICY)
    assert [r.status for r in chain.results] == [AssertionStatus.PASSED] * 7


def test_first_failure_raises_with_score_threshold_and_sentence() -> None:
    chain = assert_behavior(REPLY).mentions("refund")
    with pytest.raises(AssertionError) as info:
        chain.tone("enthusiastic").mentions("password reset")
    message = str(info.value)
    assert message.startswith("tone 'enthusiastic' failed (score -")
    assert message.count("tone 'enthusiastic'") == 1  # said once, not repeated
    assert "score -" in message and "threshold 0.200" in message
    assert "I'm" not in message and "sorry for the delay" in message
    assert [r.assertion for r in chain.results] == ["mentions", "tone"]


def test_check_behavior_runs_everything_and_raises_once() -> None:
    chain = (
        check_behavior(REPLY)
        .mentions("password reset")
        .tone("enthusiastic")
        .numbers_from("Refunds of $40 within 5 days.")
        .max_words(5)
        .mentions("refund")
    )
    with pytest.raises(AssertionError) as info:
        chain.verify()
    lines = str(info.value).splitlines()
    assert lines[0] == "4 of 5 behaviour checks failed:"
    assert sum(line.strip().startswith("failed") for line in lines) == 4
    assert any("number '45'" in line for line in lines)
    assert any(line.strip().startswith("passed") and "'refund'" in line for line in lines)


def test_check_behavior_as_a_context_manager() -> None:
    with pytest.raises(AssertionError, match="1 of 2"), check_behavior(REPLY) as chain:
        chain.mentions("refund").mentions("football match")
    with check_behavior(REPLY) as chain:
        chain.mentions("refund")


def test_is_json_with_a_schema_dict_or_file(tmp_path: Path) -> None:
    schema = {"type": "object", "required": ["total"], "properties": {"total": {"type": "number"}}}
    assert_behavior('{"total": 45}').is_json(schema=schema).is_json()
    with pytest.raises(AssertionError, match="total"):
        assert_behavior('{"sum": 45}').is_json(schema=schema)
    with pytest.raises(AssertionError, match="not JSON"):
        assert_behavior("Sure! " + '{"total": 45}').is_json()
    path = tmp_path / "invoice.schema.json"
    path.write_text(json.dumps(schema), encoding="utf-8")
    assert_behavior('{"total": 1.5}').is_json(schema=path)
    with pytest.raises(AssertionError, match=r"invoice\.schema\.json"):
        assert_behavior('{"total": "1.5"}').is_json(schema=str(path))


def test_not_degenerate_uses_compression_and_distinct_n() -> None:
    assert_behavior(REPLY).not_degenerate()
    loop = "I can help with that. " * 40
    with pytest.raises(AssertionError, match="compression ratio"):
        assert_behavior(loop).not_degenerate()
    chain = check_behavior(loop).not_degenerate()
    assert [r.assertion for r in chain.results] == ["compression-ratio", "distinct-n"]
    assert all(r.status is AssertionStatus.FAILED for r in chain.results)
    with pytest.raises(AssertionError, match="2 of 2"):
        chain.verify()


def test_missing_nli_model_is_unavailable_not_a_pass() -> None:
    with pytest.raises(BehaviorUnavailable, match="entailment could not be checked"):
        assert_behavior(REPLY).grounded_in(POLICY)


def test_invented_number_fails_without_any_model() -> None:
    with pytest.raises(AssertionError, match="'54'"):
        assert_behavior(REPLY.replace("$45", "$54")).numbers_from(POLICY)


def test_bad_arguments_are_errors_not_failures() -> None:
    with pytest.raises(ValueError, match="unknown tone 'cheerful'"):
        assert_behavior(REPLY).tone("cheerful")
    with pytest.raises(ValueError, match="at most 1"):
        assert_behavior(REPLY).mentions("refund", threshold=2)
