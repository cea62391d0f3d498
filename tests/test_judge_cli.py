"""`redline calibrate` end to end against the loopback server."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from casefiles import slop_rubric
from redline.cli import ExitCode, main
from redline.config import parse_config
from redline.judge import Label, calibration_path, judge_trust, load_rubric, write_labels
from servers import LoopbackLLMServer

RUBRIC = slop_rubric()

CLEAN = '{"score": 1, "reasoning": "to the point", "is_concise": true}'
SLOP = '{"score": 5, "reasoning": "filler", "is_concise": false}'


@pytest.fixture
def project(tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "redline.toml").write_text(llm_server.redline_toml(), encoding="utf-8")
    (tmp_path / "rubrics").mkdir()
    (tmp_path / "rubrics" / "slop.yaml").write_text(RUBRIC, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _labels(project: Path, pairs: list[tuple[bool, str]]) -> None:
    rubric = load_rubric(project / "rubrics" / "slop.yaml")
    labels = [
        Label(f"run1:s/c#{i}", f"{output} ", passed, "ana", "2026-11-30T01:00:00Z")
        for i, (passed, output) in enumerate(pairs)
    ]
    write_labels(project / "labels" / "slop.yaml", rubric, labels)


@pytest.mark.usefixtures("loopback_key")
def test_calibrate_measures_kappa_and_writes_the_calibration(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    pairs = [(True, CLEAN)] * 11 + [(True, SLOP)] + [(False, SLOP)] * 9 + [(False, CLEAN)]
    _labels(project, pairs)
    code = main(["calibrate", "--rubric", "rubrics/slop.yaml"])
    out = capsys.readouterr().out
    assert code == ExitCode.GREEN, out
    assert llm_server.count() == 22
    data = json.loads(calibration_path(project / "rubrics" / "slop.yaml").read_text())
    # a=11 b=1 c=1 d=9: kappa = 2(ad − bc) / ((a+b)(b+d) + (a+c)(c+d)) = 196/240
    assert data["kappa"] == pytest.approx(196 / 240)
    assert data["observed_agreement"] == pytest.approx(20 / 22)
    assert data["n"] == 22 and data["judge_model_id"] == "loopback:fake-model-2025-01-01"
    assert data["confusion"]["pass"] == {"pass": 11, "fail": 1}
    assert "Cohen's kappa 0.817" in out and "judge trusted" in out
    config = parse_config(project / "redline.toml")
    assert judge_trust(load_rubric(project / "rubrics" / "slop.yaml"), config.model("fake")).trusted


@pytest.mark.usefixtures("loopback_key")
def test_calibrate_reports_too_few_labels_and_malformed_answers(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _labels(project, [(True, CLEAN)] * 6 + [(False, SLOP)] * 5 + [(False, "Great question!")])
    code = main(["calibrate", "--rubric", "rubrics/slop.yaml"])
    out = capsys.readouterr().out
    assert code == ExitCode.RED
    assert "1 malformed judge answer(s), counted as 'fail'" in out
    assert "too few labels: n 12 < 20" in out
    data = json.loads(calibration_path(project / "rubrics" / "slop.yaml").read_text())
    assert data["kappa"] == pytest.approx(1.0) and data["malformed_judge_answers"] == 1


@pytest.mark.usefixtures("loopback_key")
def test_calibrate_with_one_sided_labels_says_kappa_is_undefined(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _labels(project, [(True, CLEAN)] * 20)
    code = main(["calibrate", "--rubric", "rubrics/slop.yaml"])
    out = capsys.readouterr().out
    assert code == ExitCode.RED
    assert "kappa is undefined: chance agreement is 1" in out
    assert "nan" not in out.lower()
    assert (
        json.loads(calibration_path(project / "rubrics" / "slop.yaml").read_text())["kappa"] is None
    )


@pytest.mark.usefixtures("loopback_key")
def test_calibrate_writes_nothing_when_judge_calls_fail(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rubric = project / "rubrics" / "slop.yaml"
    rubric.write_text(RUBRIC.replace("MODE:echo {{output}}", "{{output}} MODE:500"), "utf-8")
    _labels(project, [(True, CLEAN)] * 3)
    code = main(["calibrate", "--rubric", "rubrics/slop.yaml"])
    assert code == ExitCode.INCONCLUSIVE
    assert "3 of 3 judge call(s) failed; nothing written" in capsys.readouterr().out
    assert not calibration_path(rubric).exists()


def test_calibrate_without_labels_is_a_usage_error(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["calibrate", "--rubric", "rubrics/slop.yaml"]) == ExitCode.USAGE
    assert "redline label RUN_ID --rubric rubrics/slop.yaml" in capsys.readouterr().err
