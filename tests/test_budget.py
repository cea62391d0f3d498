"""Cost estimate before a run and the budget that stops one, against the loopback server
(which answers with usage tokens, so every sample's cost is recorded from the price table)."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import parse_config
from redline.running.budget import Basis
from redline.running.runner import RunOptions, estimate_run
from redline.running.store import RunStore
from redline.running.usage import usd
from redline.suite.cases import load_suites
from redline.vocabulary.records import RunResult, RunStatus
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_suite

SRC = Path(__file__).resolve().parents[1] / "src"
ANY_TEXT = "  - type: max-chars\n    value: 100000\n"
#: Replies of 40 to 80 words drawn per sample: output tokens vary like a real model's.
WORDY = {f"w{i}": (f"MODE:words WORDS:40-80 case {i}", ANY_TEXT) for i in range(6)}


@pytest.fixture
def project(tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, SECRET)
    (tmp_path / "redline.toml").write_text(
        llm_server.redline_toml(key_env=KEY_ENV, concurrency=4), encoding="utf-8"
    )
    _suite(tmp_path, WORDY)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _suite(project: Path, cases: dict[str, tuple[str, str]]) -> None:
    write_suite(project, "s", cases, samples=5)
    suite_yaml = project / "s" / "suite.yaml"
    suite_yaml.write_text(suite_yaml.read_text() + "max_tokens: 200\n", encoding="utf-8")


def _store(project: Path) -> RunStore:
    return RunStore.open(project / ".redline" / "redline.db")


def _recorded_cost(project: Path, run_id: str) -> float:
    with _store(project) as store:
        return sum(s.cost or 0.0 for s in store.samples(run_id))


def _latest(project: Path) -> str:
    with _store(project) as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return run.id


def _estimate(project: Path, samples: int | None = None) -> tuple[float, set[Basis]]:
    config = parse_config(project / "redline.toml")
    suites = load_suites([project / "s"], config)
    with _store(project) as store:
        estimate = estimate_run(suites, config, store, RunOptions(samples=samples))
    assert estimate.cost is not None
    return estimate.cost, {c.basis for c in estimate.cases}


def test_estimate_accuracy_against_what_the_run_recorded(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # No history: prompt length and max_tokens, an upper bound of what is spent.
    first_estimate, bases = _estimate(project, samples=10)
    assert bases == {Basis.PROMPT}
    assert main(["run", "s", "--samples", "10", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert f"estimated cost {usd(first_estimate)} (an upper bound) for 60 sample(s)" in out
    first_actual = _recorded_cost(project, _latest(project))
    assert first_actual > 0
    assert first_estimate >= first_actual

    # With history: each case's mean tokens × samples × price. New seeds draw new reply
    # lengths, so this measures a real estimate, not a replay of the same numbers.
    second_estimate, bases = _estimate(project, samples=10)
    assert bases == {Basis.HISTORY}
    assert main(["run", "s", "--samples", "10", "--quiet"]) == 0
    second_actual = _recorded_cost(project, _latest(project))
    error = abs(second_estimate - second_actual) / second_actual
    print(
        f"estimate from history ${second_estimate:.6f}, recorded ${second_actual:.6f}: {error:.1%}"
    )
    assert error < 0.15
    # The history estimate is much closer than the upper bound was.
    assert error < abs(first_estimate - first_actual) / first_actual


def test_budget_stops_scheduling_and_the_run_is_inconclusive_not_red(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "s", "--quiet"]) == 0
    full = _recorded_cost(project, _latest(project))
    _suite(project, {"bad": ("MODE:preamble", "  - type: is-json\n")})
    capsys.readouterr()
    llm_server.reset()
    budget = full * 0.4
    assert main(["run", "s", "--budget", f"{budget:.8f}", "--quiet"]) == 3
    out = capsys.readouterr().out
    run_id = _latest(project)
    with _store(project) as store:
        run = store.run(run_id)
        stored = len(store.samples(run_id))
    spent = _recorded_cost(project, run_id)
    assert run.result is RunResult.INCONCLUSIVE, "a stopped run is never red"
    assert run.status is RunStatus.FINISHED
    info = run.args["budget"]
    assert info["stopped"] is True
    assert spent <= budget
    assert info["spent_usd"] == pytest.approx(spent)
    assert 0 < stored < 35 and llm_server.count() == stored, out
    assert info["not_run"] == 35 - stored
    assert sum(info["not_run_by_case"].values()) == 35 - stored
    assert "budget of $" in out and f"{35 - stored} sample(s) not run" in out
    assert "inconclusive, not red" in out
    assert f"redline run --resume {run_id} --budget" in out
    assert main(["show", run_id]) == 0
    assert "sample(s) not run, so the run is inconclusive, not red" in capsys.readouterr().out

    # A resume with room in the budget runs only what was not run, and settles the run.
    assert main(["run", "--resume", run_id, "--budget", "10", "--quiet"]) == 1
    with _store(project) as store:
        run = store.run(run_id)
        assert len(store.samples(run_id)) == 35
    assert run.result is RunResult.RED
    assert run.args["budget"]["stopped"] is False
    assert llm_server.count() == 35


def test_max_run_cost_in_config_and_unpriced_models(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = project / "redline.toml"
    toml.write_text("max_run_cost = 0.0000001\n" + toml.read_text(), encoding="utf-8")
    assert main(["run", "s", "--quiet"]) == 3
    assert "budget: $1e-07" in capsys.readouterr().out
    assert llm_server.count() == 0, "not even one sample fits"

    # A budget cannot be kept on a model whose price is unknown: said before anything runs.
    toml.write_text(toml.read_text().replace("[prices.", "[prices.unused-"), encoding="utf-8")
    toml.write_text(
        toml.read_text().replace('[prices.unused-"loopback:', '[prices."other:'), encoding="utf-8"
    )
    assert main(["run", "s", "--budget", "1"]) == 2
    err = capsys.readouterr().err
    assert "--budget needs a price for loopback:fake-model-2025-01-01" in err
    assert llm_server.count() == 0


def test_price_table_schema_errors_name_the_entry(tmp_path: Path) -> None:
    path = tmp_path / "redline.toml"
    path.write_text(
        '[models]\nmain = "openai:gpt-x-2025-01-01"\n'
        "[prices.main]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\n"
        '[prices."openai:gpt-y-2025-01-01"]\ninput_per_mtok = -1\noutput_per_mtok = 1\n'
        "[prices.nobody]\ninput_per_mtok = 1\noutput_per_mtok = 1\n"
        '[prices."openai:gpt-z-2025-01-01"]\ninput = 1\n',
        encoding="utf-8",
    )
    with pytest.raises(Exception) as info:
        parse_config(path)
    message = str(info.value)
    assert '[prices."openai:gpt-y-2025-01-01"] needs input_per_mtok' in message
    assert "[prices.nobody]: 'nobody' is neither a pinned alias" in message
    assert "unknown key(s) input" in message
    path.write_text(
        '[models]\nmain = "openai:gpt-x-2025-01-01"\nmax_run_cost = 5\n'
        "[prices.main]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\n",
        encoding="utf-8",
    )
    path.write_text(
        'max_run_cost = 5\nconfirm_cost_above = 0.5\n[models]\nmain = "openai:gpt-x-2025-01-01"\n'
        "[prices.main]\ninput_per_mtok = 2.0\noutput_per_mtok = 8.0\n",
        encoding="utf-8",
    )
    config = parse_config(path)
    price = config.price("openai:gpt-x-2025-01-01")
    assert price is not None and price.cost(1_000_000, 1_000_000) == 10.0
    assert config.max_run_cost == 5.0 and config.confirm_cost_above == 0.5
    path.write_text("max_run_cost = -2\n", encoding="utf-8")
    with pytest.raises(Exception, match="max_run_cost must be a positive amount"):
        parse_config(path)


def _run_on_a_terminal(project: Path, answer: bytes, *args: str) -> tuple[int, str]:
    """`redline run` with stdin and stdout on a pseudo-terminal; answers the question."""
    leader, follower = pty.openpty()
    env = {**os.environ, "PYTHONPATH": str(SRC), "COLUMNS": "200"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "redline", "run", "s", "--quiet", *args],
        cwd=project,
        env=env,
        stdin=follower,
        stdout=follower,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    answered = False
    while True:
        ready, _, _ = select.select([leader], [], [], 60)
        if not ready:
            proc.kill()
            raise AssertionError(f"no output for 60 s: {seen!r}")
        try:
            chunk = os.read(leader, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
        if not answered and b"[y/N]" in seen:
            os.write(leader, answer)
            answered = True
    os.close(leader)
    return proc.wait(timeout=60), seen.decode("utf-8", "replace")


def test_asks_on_a_terminal_when_the_estimate_is_over_the_threshold(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    toml = project / "redline.toml"
    toml.write_text("confirm_cost_above = 0.000001\n" + toml.read_text(), encoding="utf-8")
    code, out = _run_on_a_terminal(project, b"n\n")
    assert "Run it? [y/N]" in out
    assert code == 2 and "not started: nothing was sent" in out
    assert llm_server.count() == 0
    code, out = _run_on_a_terminal(project, b"y\n")
    assert code == 0 and llm_server.count() == 30
    # --yes skips the question; off a terminal (CI) nothing asks either.
    code, out = _run_on_a_terminal(project, b"", "--yes")
    assert code == 0 and "[y/N]" not in out


def test_budget_reserves_the_worst_case_of_samples_in_flight() -> None:
    from redline.config import Price
    from redline.running.budget import Budget, CaseEstimate, Estimate

    case = CaseEstimate("s", "c", 10, 100.0, 50.0, Basis.HISTORY, per_sample=0.1, ceiling=0.3)
    budget = Budget(1.0, Estimate("p:m", Price(1.0, 1.0), (case,)))
    assert [budget.admit("s", "c") for _ in range(3)] == [0.3, 0.3, 0.3]
    assert budget.admit("s", "c") is None, "a fourth worst case would pass the limit"
    assert budget.stopped
    for _ in range(3):
        budget.settle("s", "c", 0.1, 0.3)
    assert budget.spent == pytest.approx(0.3)
    assert budget.admit("s", "c") is None, "once stopped, a run schedules nothing more"
    record = budget.record({"s/c": 7})
    assert record["not_run"] == 7 and record["stopped"] is True
