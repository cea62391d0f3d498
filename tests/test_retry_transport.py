"""`redline run --retry-transport`: complete a run that a provider's bad hour made inconclusive."""

from __future__ import annotations

from pathlib import Path

import pytest

from redline.cli import main
from redline.running.runner import RETRIES_ARG
from redline.running.store import RunStore
from redline.vocabulary.records import RunResult, RunStatus
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer
from test_cli_run import latest_run_id, project  # noqa: F401  (fixture)
from test_runner import write_suite

#: max_retries = 2 in the test config: three attempts per sample, so FAILS:3 fails a sample
#: for good in the first run and the retry's fourth attempt is answered.
OUTAGE = "MODE:500 FAILS:3"


def _suite(root: Path) -> Path:
    cases = {f"ok{i}": f"MODE:json n{i}" for i in range(6)}
    cases.update({"down1": f"{OUTAGE} d1", "down2": f"{OUTAGE} d2"})
    return write_suite(root, "s", cases, samples=2, tier="quality")


def test_retry_draws_only_the_transport_slots_and_keeps_the_first_errors(
    project: Path,  # noqa: F811
    llm_server: LoopbackLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _suite(project)
    assert main(["run", "s", "--quiet"]) == 3
    run_id = latest_run_id(project)
    before = llm_server.count()
    capsys.readouterr()

    assert main(["run", "--retry-transport", run_id, "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"run {run_id}: green" in out
    # Four slots (2 cases × 2 samples), one answered attempt each.
    assert llm_server.count() - before == 4
    with RunStore.open(project / ".redline" / "redline.db") as store:
        record = store.run(run_id)
        cases = {c.case_id: c for c in store.cases(run_id)}
        superseded = store.superseded(run_id)
        samples = store.samples(run_id)
    assert record.status is RunStatus.FINISHED and record.result is RunResult.GREEN
    assert cases["down1"].passes == 2 and cases["down1"].verdicts[Verdict.TRANSPORT] == 0
    assert len(samples) == 16
    assert sorted((s.case_id, s.index) for s in superseded) == [
        ("down1", 0),
        ("down1", 1),
        ("down2", 0),
        ("down2", 1),
    ]
    assert all(s.verdict is Verdict.TRANSPORT and s.error for s in superseded)
    assert record.args[RETRIES_ARG][0]["redrawn"] == {"transport": 4}
    assert len(runs_in(project)) == 1


def runs_in(root: Path) -> list[str]:
    with RunStore.open(root / ".redline" / "redline.db") as store:
        return [r.id for r in store.runs()]


def test_retry_is_refused_when_inputs_changed_and_when_nothing_failed_in_transport(
    project: Path,  # noqa: F811
    llm_server: LoopbackLLMServer,
    capsys: pytest.CaptureFixture[str],
) -> None:
    folder = _suite(project)
    assert main(["run", "s", "--quiet"]) == 3
    run_id = latest_run_id(project)
    case = folder / "ok0.yaml"
    original = case.read_text(encoding="utf-8")
    case.write_text(original.replace("n0", "n0 edited"), encoding="utf-8")
    capsys.readouterr()
    assert main(["run", "--retry-transport", run_id]) == 2
    err = capsys.readouterr().err
    assert "inputs changed" in err and "ok0.yaml" in err
    with RunStore.open(project / ".redline" / "redline.db") as store:
        assert store.superseded(run_id) == []  # nothing was set aside by the refused retry

    case.write_text(original, encoding="utf-8")
    assert main(["run", "--retry-transport", run_id, "--quiet"]) == 0
    capsys.readouterr()
    assert main(["run", "--retry-transport", run_id]) == 2
    assert "has no transport sample" in capsys.readouterr().err
    assert main(["run", "s", "--retry-transport", run_id]) == 2
    assert "drop SUITE_DIR" in capsys.readouterr().err
