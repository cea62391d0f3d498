"""`redline run --judge [--judge-blocks]` end to end: exit codes, stored judge results, header."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.cli import main
from redline.config import parse_config
from redline.running.runner import RunOptions
from redline.running.store import RunStore
from redline.vocabulary.verdicts import AssertionStatus, Verdict
from servers import LoopbackLLMServer
from test_judge_session import judge_requests, trust_rubric, write_judged_suite

pytestmark = pytest.mark.skipif(
    "judge" not in RunOptions.__dataclass_fields__,
    reason="the runner does not take --judge yet (wiring listed in the judge's report)",
)


@pytest.fixture
def project(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    loopback_key: str,
) -> Path:
    (tmp_path / "redline.toml").write_text(llm_server.redline_toml(), encoding="utf-8")
    write_judged_suite(tmp_path / "judged")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _judge_results(project: Path, case_id: str) -> list[tuple[Verdict, AssertionStatus, str]]:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return [
            (s.verdict, a.status, a.reason)
            for s in store.samples(run.id, case_id)
            for a in s.assertions
            if a.type == "judge"
        ]


def test_without_judge_the_judge_is_skipped_and_never_called(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    assert main(["run", "judged", "--case", "0003-sloppy", "--quiet"]) == 0
    assert judge_requests(llm_server) == 0
    assert {status for _, status, _ in _judge_results(project, "0003-sloppy")} == {
        AssertionStatus.SKIPPED
    }


def test_advisory_judge_comments_but_cannot_turn_the_run_red(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "judged", "--case", "0003-sloppy", "--judge", "--judge-blocks", "--quiet"])
    out = capsys.readouterr().out
    assert code == 0, out
    assert judge_requests(llm_server) == 3
    assert "judge slop (judged/rubrics/slop.yaml): advisory: not calibrated" in out
    for verdict, status, reason in _judge_results(project, "0003-sloppy"):
        assert (verdict, status) == (Verdict.OK, AssertionStatus.FAILED)
        assert reason.startswith("advisory")


def test_trusted_judge_turns_the_run_red_only_with_judge_blocks(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    config = parse_config(project / "redline.toml")
    trust_rubric(config, project / "judged" / "rubrics" / "slop.yaml")
    assert main(["run", "judged", "--case", "0003-sloppy", "--judge", "--quiet"]) == 0
    assert main(["run", "judged", "--case", "0003-sloppy", "--judge", "--judge-blocks"]) == 1
    out = capsys.readouterr().out
    assert "trusted: kappa 1.00 ≥ min_kappa 0.60" in out and "; blocks" in out
    assert {v for v, _, _ in _judge_results(project, "0003-sloppy")} == {Verdict.WRONG}


def test_a_run_judges_only_samples_that_passed_layer_1(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    cases = ["--case", "0001-good", "--case", "0002-layer1-fails"]
    assert main(["run", "judged", *cases, "--judge", "--quiet"]) == 1
    assert judge_requests(llm_server) == 3
    assert all(
        "earlier layer failed" in r for _, _, r in _judge_results(project, "0002-layer1-fails")
    )


def test_judge_blocks_without_judge_is_a_usage_error(project: Path) -> None:
    assert main(["run", "judged", "--judge-blocks"]) == 2
