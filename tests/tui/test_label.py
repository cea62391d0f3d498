"""Blind labelling: the screen shows outputs and the rubric, never what the judge said."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import Static

from casefiles import slop_rubric
from redline.cli import ExitCode, main
from redline.judge import Label, labels_path, load_rubric, read_labels, write_labels
from redline.judge.labels import LabelItem, rubric_card
from redline.running.judging import label_items
from redline.running.store import RunStore
from redline.suite.cases import Case, load_suite
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.records import RunKind, RunRecord, RunStatus, SampleRecord
from redline.vocabulary.verdicts import AssertionResult, AssertionStatus, Verdict
from redline_tui.label import LabelApp

pytestmark = pytest.mark.anyio

MARK = "JUDGEMARK"
RUBRIC = slop_rubric(prompt="Judge: {{output}} (asked: {{q}})", checks=False)
CASE = """\
id: 0001-explain
provenance:
  ticket: T-1
vars:
  q: What is idempotency?
assert:
  - type: contains
    value: idempot
  - type: judge
    rubric: rubrics/slop.yaml
"""
OUTPUTS = [
    "Idempotency means a retried request has the same effect as one.",
    "Great question! [bold red]Idempotency[/] is truly a game-changer.",
    "Something else entirely.",
    "",
]


def _judge(status: AssertionStatus, score: float | None) -> AssertionResult:
    return AssertionResult(
        index=1,
        type="judge",
        status=status,
        reason=f"judge slop score {score} (pass: score ≤ 2); reasoning: {MARK} says so",
        score=score,
        threshold=2.0,
    )


def _contains(passed: bool) -> AssertionResult:
    status = AssertionStatus.PASSED if passed else AssertionStatus.FAILED
    return AssertionResult(0, "contains", status, "contains 'idempot'")


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    suite = tmp_path / "judged"
    (suite / "rubrics").mkdir(parents=True)
    (suite / "system.txt").write_text("Explain.\n", encoding="utf-8")
    (suite / "suite.yaml").write_text(
        "name: judged\nprompt:\n  system: system.txt\n  user: '{{q}}'\nmodel: fake\n",
        encoding="utf-8",
    )
    (suite / "rubrics" / "slop.yaml").write_text(RUBRIC, encoding="utf-8")
    (suite / "0001-explain.yaml").write_text(CASE, encoding="utf-8")
    (tmp_path / "redline.toml").write_text(
        'suites = ["judged"]\n[models]\nfake = "openai:fake-2025-01-01"\n', encoding="utf-8"
    )
    store_path = tmp_path / ".redline" / "redline.db"
    store_path.parent.mkdir()
    with RunStore.open(store_path) as store:
        store.begin_run(
            RunRecord(
                id="run-a",
                kind=RunKind.RUN,
                status=RunStatus.FINISHED,
                result=None,
                started_at="2026-11-30T01:00:00+00:00",
                finished_at=None,
                model_id="openai:fake-2025-01-01",
                model_alias="fake",
                suites=("judged",),
                args={"suites": ["judged"]},
            )
        )
        samples = [
            (OUTPUTS[0], Verdict.OK, (_contains(True), _judge(AssertionStatus.FAILED, 4.0)), None),
            (OUTPUTS[1], Verdict.OK, (_contains(True), _judge(AssertionStatus.PASSED, 1.0)), None),
            (OUTPUTS[2], Verdict.WRONG, (_contains(False),), None),
            (OUTPUTS[3], Verdict.TRANSPORT, (), "timeout"),
        ]
        for index, (output, verdict, results, error) in enumerate(samples):
            store.add_sample(
                SampleRecord(
                    run_id="run-a",
                    suite="judged",
                    case_id="0001-explain",
                    index=index,
                    output=output,
                    verdict=verdict,
                    finish_reason=None if error else FinishReason.STOP,
                    error=error,
                    assertions=results,
                )
            )
    monkeypatch.chdir(tmp_path)
    yield tmp_path


def _items(project: Path, done: list[Label] | None = None) -> list[LabelItem]:
    suite = load_suite(project / "judged")
    cases: dict[tuple[str, str], Case] = {(c.suite, c.id): c for c in suite.cases}
    rubric = load_rubric(project / "judged" / "rubrics" / "slop.yaml")
    with RunStore.open(project / ".redline" / "redline.db") as store:
        return label_items(store.samples("run-a"), cases, rubric, done or [])


def _screen_text(app: LabelApp) -> str:
    """Every text widget's content; the whole rendered screen must not carry the mark either."""
    assert MARK not in app.export_screenshot()
    return "\n".join(str(widget.content) for widget in app.screen.query(Static))


def test_only_outputs_a_judge_would_see_are_offered_without_judge_results(
    project: Path,
) -> None:
    items = _items(project)
    assert [i.output for i in items] == OUTPUTS[:2]
    assert all(MARK not in repr(item) for item in items)
    assert items[0].ref == "run-a:judged/0001-explain#0"
    done = [Label(items[0].ref, OUTPUTS[0], True, "ana", "2026-11-30T02:00:00Z")]
    assert [i.output for i in _items(project, done)] == OUTPUTS[1:2]


async def test_labelling_screen_never_shows_the_judge_score(project: Path) -> None:
    rubric = load_rubric(project / "judged" / "rubrics" / "slop.yaml")
    recorded: list[tuple[str, bool, int | None]] = []
    path = labels_path(project, rubric)
    labels: list[Label] = []

    def record(item: LabelItem, passed: bool, score: int | None) -> None:
        recorded.append((item.ref, passed, score))
        labels.append(Label(item.ref, item.output, passed, "ana", "now", score, item.vars))
        write_labels(path, rubric, labels)

    app = LabelApp(_items(project), rubric_card(rubric), record)
    async with app.run_test(size=(120, 30)) as pilot:
        first = _screen_text(app)
        assert OUTPUTS[0] in first and "5  Full of filler." in first and "1/2" in first
        assert MARK not in first and "score 4" not in first and "4.0" not in first
        await pilot.press("2", "p")
        second = _screen_text(app)
        assert "[bold red]Idempotency[/]" in second
        assert MARK not in second and "score 1" not in second and "1.0" not in second
        await pilot.press("f")
        assert "All done: 2 labelled" in _screen_text(app)
        await pilot.press("q")
    assert app.return_value == 2
    assert recorded == [
        ("run-a:judged/0001-explain#0", True, 2),
        ("run-a:judged/0001-explain#1", False, None),
    ]
    stored = read_labels(path)
    assert [(x.passed, x.score, x.vars) for x in stored] == [
        (True, 2, {"q": "What is idempotency?"}),
        (False, None, {"q": "What is idempotency?"}),
    ]
    assert MARK not in path.read_text(encoding="utf-8")


async def test_skip_moves_on_without_a_label(project: Path) -> None:
    rubric = load_rubric(project / "judged" / "rubrics" / "slop.yaml")
    recorded: list[bool] = []
    app = LabelApp(_items(project), rubric_card(rubric), lambda i, p, s: recorded.append(p))
    async with app.run_test(size=(120, 30)) as pilot:
        await pilot.press("s", "f", "q")
    assert recorded == [False]
    assert app.return_value == 1


def test_label_command_with_everything_labelled_says_so(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = load_rubric(project / "judged" / "rubrics" / "slop.yaml")
    done = [
        Label(f"run-a:judged/0001-explain#{i}", OUTPUTS[i], True, "ana", "2026-11-30T02:00:00Z")
        for i in (0, 1)
    ]
    write_labels(labels_path(project, rubric), rubric, done)
    code = main(["label", "run-a", "--rubric", "judged/rubrics/slop.yaml", "--who", "ana"])
    assert code == ExitCode.GREEN
    assert "nothing to label" in capsys.readouterr().out


def test_label_command_needs_a_terminal_when_there_is_something_to_label(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["label", "run-a", "--rubric", "judged/rubrics/slop.yaml", "--who", "ana"])
    assert code == ExitCode.USAGE
    err = capsys.readouterr().err
    assert "`redline label` is a full-screen app and needs a terminal" in err
    assert "output(s) to label" in err
