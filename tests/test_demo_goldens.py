"""The repository's own demo cases carry a reference answer each, and it passes them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from redline.assertions.evaluate import evaluate_sample
from redline.casemodel.python_data import answer_of
from redline.config import load_config
from redline.deciding.baseline import load_baseline
from redline.running.manifest import case_hash
from redline.suite.cases import load_suites
from redline.vocabulary.completion import Completion, FinishReason
from redline.vocabulary.verdicts import AssertionStatus, Verdict

ROOT = Path(__file__).resolve().parents[1]


def test_every_demo_case_has_a_golden_answer_that_passes_its_own_assertions(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Quickstart's triage shows a diff on every case; the diff's reference is a right answer.

    Semantic assertions that need a model are left out: Layer 1 decides the shape.
    """
    monkeypatch.chdir(ROOT)
    suites = load_suites([ROOT / "cases"], load_config())
    cases = [c for s in suites for c in s.cases]
    assert len(cases) == 19
    for case in cases:
        assert case.golden, f"{case.id} has no golden answer"
        golden = Completion(case.golden, FinishReason.STOP, latency_ms=100.0, output_tokens=80)
        if case.golden.lstrip().startswith(("{", "[")) and any(
            a.type_name.startswith("tool") for a in case.assertions
        ):
            # A tool case's reference answer is the assistant's turn(s), calls included.
            answer = answer_of(json.loads(case.golden))
            golden = dataclasses.replace(golden, text=answer.text, tool_calls=answer.tool_calls)
        evaluation = evaluate_sample(case, golden)
        failed = [r for r in evaluation.results if r.status is AssertionStatus.FAILED]
        assert not failed, (case.id, failed)
        assert evaluation.verdict is Verdict.OK, case.id


def test_a_golden_file_is_read_byte_for_byte_and_is_part_of_the_case_hash(
    tmp_path: Path,
) -> None:
    from redline.suite.cases import load_suite

    suite = tmp_path / "s"
    (suite / "golden").mkdir(parents=True)
    (suite / "suite.yaml").write_text(
        "name: s\nprompt:\n  system: p.txt\n  user: hi\nmodel: m\n", encoding="utf-8"
    )
    (suite / "p.txt").write_text("sys", encoding="utf-8")
    (suite / "golden" / "a.txt").write_bytes(b"line one\r\n\xc2\xa0line two\n")
    (suite / "a.yaml").write_text(
        "id: a\nprovenance: {ticket: T-1}\ngolden: file://golden/a.txt\n"
        "assert:\n  - type: contains\n    value: x\n",
        encoding="utf-8",
    )
    case = load_suite(suite).case("a")
    assert case.golden == "line one\r\n\u00a0line two\n"
    assert (suite / "golden" / "a.txt").resolve() in case.files
    inline = suite / "a.yaml"
    inline.write_text(
        inline.read_text(encoding="utf-8").replace("file://golden/a.txt", "'the answer'"),
        encoding="utf-8",
    )
    assert load_suite(suite).case("a").golden == "the answer"


def test_a_missing_golden_file_is_an_error_with_file_and_line(tmp_path: Path) -> None:
    from redline.errors import ProblemsError
    from redline.suite.cases import load_suite

    suite = tmp_path / "s"
    suite.mkdir()
    (suite / "suite.yaml").write_text(
        "name: s\nprompt:\n  system: p.txt\n  user: hi\nmodel: m\n", encoding="utf-8"
    )
    (suite / "p.txt").write_text("sys", encoding="utf-8")
    (suite / "a.yaml").write_text(
        "id: a\nprovenance: {ticket: T-1}\ngolden: file://golden/missing.txt\n"
        "assert:\n  - type: contains\n    value: x\n",
        encoding="utf-8",
    )
    with pytest.raises(ProblemsError) as caught:
        load_suite(suite)
    assert "a.yaml:3:" in str(caught.value)
    assert "golden answer" in str(caught.value) and "does not exist" in str(caught.value)


def test_golden_reference_prefers_the_accepted_baseline_and_says_which() -> None:
    from redline.deciding.baseline import Baseline, BaselineCase, Golden, golden_reference
    from redline.vocabulary.records import CaseOutcome

    def entry(golden: Golden | None, passes: int) -> Baseline:
        case = BaselineCase(
            "c", "run1", "quality", 3, passes, 2, CaseOutcome.PASS, "m", "h", golden=golden
        )
        return Baseline("s", {"c": case})

    accepted = golden_reference(entry(Golden(1, "accepted"), 3), "c", "written")
    assert accepted.text == "accepted"
    assert accepted.source == "the accepted baseline's golden output (run run1, sample 1)"
    fallback = golden_reference(entry(None, 0), "c", "written")
    assert fallback.text == "written"
    assert fallback.source.startswith("the case's own reference answer")
    assert "(run run1, 0/3 passed) has no passing sample" in fallback.source
    none = golden_reference(None, "c", None)
    assert none.text is None and "golden: file://" in none.source


def test_the_committed_baselines_are_of_the_cases_as_they_are(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Quickstart's first run compares with `baselines/`: a baseline saved before a case
    file changed would mark that case "case changed" on every new user's first run. Each
    suite's baseline holds every case of the suite, at the hash of its files today."""
    monkeypatch.chdir(ROOT)
    for suite in load_suites([ROOT / "cases"], load_config()):
        baseline = load_baseline(ROOT / "baselines", suite.name)
        assert baseline is not None, f"no baselines/{suite.name}.json"
        assert sorted(baseline.cases) == sorted(c.id for c in suite.cases), suite.name
        for case in suite.cases:
            assert baseline.cases[case.id].case_hash == case_hash(case), (
                f"baselines/{suite.name}.json predates {case.path.name}: run the suite and "
                "`redline baseline save RUN_ID`"
            )
