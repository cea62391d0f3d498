"""The judge as an instrument: kappa, answers, rubrics, score intervals, staleness and trust."""

from __future__ import annotations

import json
import random
import textwrap
from pathlib import Path

import pytest

from casefiles import slop_rubric
from redline.config import ModelRef
from redline.errors import ProblemsError
from redline.judge import (
    Calibration,
    JudgeStatus,
    Label,
    calibration_path,
    cohens_kappa,
    fingerprint,
    judge_trust,
    load_rubric,
    read_answer,
    read_labels,
    summarize_scores,
    write_calibration,
    write_labels,
)
from redline.judge.agreement import FAIL, PASS

RUBRIC = slop_rubric("judge", "Judge this: {{output}}")

MODEL = ModelRef("judge", "loopback", "judge-model-2025-01-01")


def write_rubric(folder: Path, text: str = RUBRIC, name: str = "slop.yaml") -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


# -- Cohen's kappa ---------------------------------------------------------------------------


def test_seed_example_judge_saying_pass_to_everything_scores_kappa_zero() -> None:
    labels = [PASS] * 9 + [FAIL]
    agreement = cohens_kappa(labels, [PASS] * 10)
    assert agreement.observed == pytest.approx(0.9)
    assert agreement.chance == pytest.approx(0.9)
    assert agreement.kappa == pytest.approx(0.0)
    assert agreement.count(FAIL, PASS) == 1 and agreement.n == 10


@pytest.mark.parametrize(
    ("cells", "kappa"),
    [
        ((20, 5, 10, 15), 0.4),  # Wikipedia's worked example: po 0.7, pe 0.5
        ((10, 0, 0, 10), 1.0),
        ((0, 10, 10, 0), -1.0),
        ((45, 15, 25, 15), 0.1304347826086957),
    ],
)
def test_kappa_known_values(cells: tuple[int, int, int, int], kappa: float) -> None:
    a, b, c, d = cells
    labels = [PASS] * (a + b) + [FAIL] * (c + d)
    judged = [PASS] * a + [FAIL] * b + [PASS] * c + [FAIL] * d
    agreement = cohens_kappa(labels, judged)
    assert agreement.kappa == pytest.approx(kappa)
    assert (agreement.count(PASS, PASS), agreement.count(PASS, FAIL)) == (a, b)
    assert (agreement.count(FAIL, PASS), agreement.count(FAIL, FAIL)) == (c, d)


# Reference values: the closed form 2(ad − bc) / ((a+b)(b+d) + (a+c)(c+d)), computed once.
REFERENCE = {
    0: (44, (21, 8, 5, 10), 0.37280701754385964),
    1: (28, (10, 5, 6, 7), 0.20618556701030927),
    2: (23, (4, 0, 4, 15), 0.5660377358490566),
    3: (35, (17, 5, 0, 13), 0.7163695299837926),
    4: (35, (18, 1, 3, 13), 0.7674418604651163),
    5: (59, (25, 7, 3, 24), 0.6624713958810069),
}


@pytest.mark.parametrize("seed", sorted(REFERENCE))
def test_kappa_matches_reference_on_random_label_sets(seed: int) -> None:
    rng = random.Random(seed)
    n = rng.randint(20, 60)
    share = rng.uniform(0.3, 0.9)
    labels = [PASS if rng.random() < share else FAIL for _ in range(n)]
    flip = {PASS: FAIL, FAIL: PASS}
    judged = [x if rng.random() < 0.8 else flip[x] for x in labels]
    expected_n, cells, kappa = REFERENCE[seed]
    agreement = cohens_kappa(labels, judged)
    assert agreement.n == expected_n
    got = tuple(agreement.count(x, y) for x in (PASS, FAIL) for y in (PASS, FAIL))
    assert got == cells
    assert agreement.kappa == pytest.approx(kappa, abs=1e-12)


def test_kappa_is_undefined_not_nan_when_chance_agreement_is_one() -> None:
    agreement = cohens_kappa([PASS] * 25, [PASS] * 25)
    assert agreement.chance == 1.0
    assert agreement.kappa is None
    assert "undefined" in agreement.describe()
    assert "nan" not in agreement.describe().lower()
    assert cohens_kappa([], []).undefined_reason == "no labelled outputs"


# -- judge answers ---------------------------------------------------------------------------


@pytest.fixture
def rubric_path(tmp_path: Path) -> Path:
    return write_rubric(tmp_path)


def test_valid_answers_pass_or_fail_by_the_rubric_rule(rubric_path: Path) -> None:
    rubric = load_rubric(rubric_path)
    good = read_answer(rubric, '{"score": 2, "reasoning": "tight", "is_concise": true}')
    bad = read_answer(rubric, '{"score": 3, "reasoning": "padding", "is_concise": false}')
    assert (good.status, good.score, dict(good.checks)) == (
        JudgeStatus.PASSED,
        2,
        {"is_concise": True},
    )
    assert (bad.status, bad.score) == (JudgeStatus.FAILED, 3)
    fenced = read_answer(rubric, '```json\n{"score": 1, "reasoning": "x", "is_concise": true}\n```')
    assert fenced.status is JudgeStatus.PASSED


@pytest.mark.parametrize(
    ("raw", "why"),
    [
        ("The text is concise. Score: 1", "not JSON"),
        ('{"score": "1", "reasoning": "x", "is_concise": true}', "score"),
        ('{"score": 7, "reasoning": "x", "is_concise": true}', "score"),
        ('{"score": 0, "reasoning": "x", "is_concise": true}', "score"),
        ('{"score": 2.5, "reasoning": "x", "is_concise": true}', "score"),
        ('{"score": true, "reasoning": "x", "is_concise": true}', "score"),
        ('{"score": 2, "is_concise": true}', "reasoning"),
        ('{"score": 2, "reasoning": "x"}', "is_concise"),
        ('{"score": 2, "reasoning": "x", "is_concise": "yes"}', "is_concise"),
        ('{"score": 2, "reasoning": "x", "is_concise": true, "bonus": 1}', "bonus"),
        ("[2]", "answer"),
        ("", "not JSON"),
    ],
)
def test_unusable_answers_are_malformed_with_raw_text_kept(
    rubric_path: Path, raw: str, why: str
) -> None:
    judgement = read_answer(load_rubric(rubric_path), raw)
    assert judgement.status is JudgeStatus.MALFORMED
    assert not judgement.passed and judgement.score is None
    assert judgement.raw == raw
    assert why in judgement.problem


# -- rubric files ----------------------------------------------------------------------------


def test_rubric_problems_are_all_reported_with_lines(tmp_path: Path) -> None:
    path = write_rubric(
        tmp_path,
        textwrap.dedent(
            """\
            name: Slop Rubric
            description: x
            anchors:
              1: a
              5: b
            pass:
              max_score: 2
              min_score: 4
            model: judge
            prompt: "no placeholder here"
            colour: red
            """
        ),
    )
    with pytest.raises(ProblemsError) as caught:
        load_rubric(path)
    found = {(p.line, p.message.split(" ")[0]) for p in caught.value.problems}
    messages = " | ".join(p.message for p in caught.value.problems)
    assert all(p.path.endswith("slop.yaml") for p in caught.value.problems)
    assert (1, "name") in found
    assert "missing 3" in messages
    assert "exactly one of max_score or min_score" in messages
    assert "min_kappa" in messages and "no default" in messages
    assert "{{output}}" in messages
    assert any(p.line == 11 and "colour" in p.message for p in caught.value.problems)
    assert len(caught.value.problems) == 6


def test_shipped_rubrics_load_with_their_bar_written_in_the_file() -> None:
    root = Path(__file__).resolve().parents[1]
    slop = load_rubric(root / "cases/explainer/rubrics/slop.yaml")
    answers = load_rubric(root / "cases/support-reply/rubrics/answers-question.yaml")
    assert slop.passes(2) and not slop.passes(3)
    assert answers.passes(4) and not answers.passes(3)
    assert "min_kappa: 0.6" in slop.path.read_text(encoding="utf-8")
    assert answers.variables() == ["message"]


# -- median and bootstrap interval -----------------------------------------------------------


def test_score_summary_median_and_bootstrap_interval() -> None:
    scores = [2, 2, 3, 2, 4, 1, 2, 5, 2, 3]
    summary = summarize_scores(scores, seed="explainer/0201")
    assert summary is not None
    assert summary.median == 2.0 and summary.n == 10
    assert 1.0 <= summary.low <= 2.0 <= summary.high <= 3.0
    assert summary.high > summary.low
    assert summarize_scores(scores, seed="explainer/0201") == summary
    assert summarize_scores([4, 4, 4]) == summarize_scores([4, 4, 4])
    single = summarize_scores([3])
    assert single is not None and (single.low, single.median, single.high) == (3, 3, 3)
    assert summarize_scores([]) is None


# -- calibration staleness and trust --------------------------------------------------------


def _calibration(rubric_file: Path, *, passes: int, fails: int, agree: float) -> Calibration:
    rubric = load_rubric(rubric_file)
    n = passes + fails
    wrong = round(n * (1 - agree))
    labels = [PASS] * passes + [FAIL] * fails
    judged = [FAIL] * wrong + [PASS] * (passes - wrong) + [FAIL] * fails
    agreement = cohens_kappa(labels, judged)
    return Calibration(
        rubric=rubric.name,
        kappa=agreement.kappa,
        n=agreement.n,
        observed=agreement.observed,
        chance=agreement.chance,
        confusion=agreement.confusion,
        date="2026-11-30",
        fingerprint=fingerprint(rubric, MODEL.id),
        min_kappa=rubric.min_kappa,
    )


def test_each_of_the_three_inputs_changes_its_own_hash_and_makes_calibration_stale(
    tmp_path: Path,
) -> None:
    (tmp_path / "prompt.txt").write_text("Judge: {{output}}\n", encoding="utf-8")
    path = write_rubric(
        tmp_path,
        RUBRIC.replace('prompt: "Judge this: {{output}}"\n', "") + "prompt: file://prompt.txt\n",
    )
    write_calibration(calibration_path(path), _calibration(path, passes=12, fails=10, agree=1.0))
    assert judge_trust(load_rubric(path), MODEL).trusted
    base = fingerprint(load_rubric(path), MODEL.id)

    path.write_text(path.read_text(encoding="utf-8") + "# a comment\n", encoding="utf-8")
    after_rubric = fingerprint(load_rubric(path), MODEL.id)
    assert after_rubric.changes_from(base) == ["rubric file"]
    trust = judge_trust(load_rubric(path), MODEL)
    assert not trust.trusted and "stale" in trust.reason and "rubric file" in trust.reason

    (tmp_path / "prompt.txt").write_text("Judge strictly: {{output}}\n", encoding="utf-8")
    after_prompt = fingerprint(load_rubric(path), MODEL.id)
    assert after_prompt.changes_from(after_rubric) == ["judge prompt template"]

    other = ModelRef("judge", "loopback", "judge-model-2025-06-01")
    after_model = fingerprint(load_rubric(path), other.id)
    assert after_model.changes_from(after_prompt) == [
        "judge model (loopback:judge-model-2025-01-01 → loopback:judge-model-2025-06-01)"
    ]
    assert len({base.rubric_sha256, after_rubric.rubric_sha256}) == 2
    assert len({after_rubric.prompt_sha256, after_prompt.prompt_sha256}) == 2
    assert len({after_prompt.model_sha256, after_model.model_sha256}) == 2


@pytest.mark.parametrize(
    ("passes", "fails", "agree", "trusted", "reason"),
    [
        (12, 10, 1.0, True, "≥ min_kappa 0.60"),
        (10, 5, 1.0, False, "too few labels: n 15 < 20"),
        (30, 0, 0.9, False, "degenerate labels: all 30 are 'pass'"),
        (12, 10, 0.75, False, "< min_kappa 0.60"),
    ],
)
def test_trust_status(
    tmp_path: Path, passes: int, fails: int, agree: float, trusted: bool, reason: str
) -> None:
    path = write_rubric(tmp_path)
    assert "not calibrated" in judge_trust(load_rubric(path), MODEL).reason
    calibration = _calibration(path, passes=passes, fails=fails, agree=agree)
    write_calibration(calibration_path(path), calibration)
    stored = json.loads(calibration_path(path).read_text(encoding="utf-8"))
    assert set(stored["sha256"]) == {"rubric_file", "judge_prompt_template", "judge_model_id"}
    assert stored["n"] == passes + fails and stored["date"] == "2026-11-30"
    trust = judge_trust(load_rubric(path), MODEL)
    assert trust.trusted is trusted
    assert reason in trust.reason


# -- labels file ------------------------------------------------------------------------------


def test_labels_round_trip_verbatim_and_edited_outputs_are_refused(tmp_path: Path) -> None:
    rubric = load_rubric(write_rubric(tmp_path))
    tricky = "Line one  \n\ttabbed: {{output}} # not a comment\n\nkeys: [1, 2]\n"
    labels = [
        Label("r1:s/c#0", tricky, True, "ana", "2026-11-30T01:00:00Z", 2, {"question": "Q?"}),
        Label("r1:s/c#1", "plain", False, "budi", "2026-11-30T01:01:00Z"),
    ]
    path = tmp_path / "labels" / "slop.yaml"
    write_labels(path, rubric, labels)
    assert read_labels(path) == labels
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("plain", "plain, edited"), encoding="utf-8")
    with pytest.raises(ProblemsError) as caught:
        read_labels(path)
    assert "output_sha256 does not match" in str(caught.value)
    assert caught.value.problems[0].line > 1
