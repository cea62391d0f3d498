"""Model migration end to end: a suite on the current model, the same cases on a candidate
(`run --against`), and `compare` with pass rates, latency, tokens, cost and the four-way
split, as text, JSON and Markdown. Real runs against the loopback server, which reports
usage tokens like a real API."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import parse_config
from redline.running.store import RunStore
from redline.running.usage import usd
from redline.vocabulary.records import RunResult
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_suite

CANDIDATE = "cand-model-2025-06-01"
ONLY_B_FAILS = f"MODE:json MODE_FOR:{CANDIDATE}=preamble"
ONLY_A_FAILS = f"MODE:preamble MODE_FOR:{CANDIDATE}=json"
BOTH_FAIL = "MODE:preamble"
B_TRUNCATES = f"MODE:json MODE_FOR:{CANDIDATE}=length"

CASES = {
    **{f"c0{i}": "MODE:json" for i in range(1, 6)},
    "c06": ONLY_B_FAILS,
    "c07": ONLY_A_FAILS,
    "c08": BOTH_FAIL,
    "c09": B_TRUNCATES,
}


def migration_toml(server: LoopbackLLMServer) -> str:
    return server.redline_toml(
        key_env=KEY_ENV,
        timeout_s=2.0,
        concurrency=8,
        models=f'candidate = "loopback:{CANDIDATE}"\n',
        extra="[prices.candidate]\ninput_per_mtok = 3.0\noutput_per_mtok = 12.0\n",
    )


@pytest.fixture
def project(tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, SECRET)
    (tmp_path / "redline.toml").write_text(migration_toml(llm_server), encoding="utf-8")
    write_suite(tmp_path, "s", CASES, samples=2)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _latest(project: Path) -> str:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return run.id


def _baseline_and_candidate(project: Path, capsys: pytest.CaptureFixture[str]) -> tuple[str, str]:
    assert main(["run", "s", "--samples", "5", "--quiet"]) == 1  # c07, c08 fail on the current
    a = _latest(project)
    capsys.readouterr()
    code = main(["run", "--model", "candidate", "--against", a, "--quiet"])
    b = _latest(project)
    assert b != a
    assert code == 1, "c06 dropping from 5/5 to 0/5 is a significant drop"
    return a, b


def test_against_runs_the_same_cases_and_samples_and_shows_the_comparison(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _baseline_and_candidate(project, capsys)
    out = capsys.readouterr().out
    with RunStore.open(project / ".redline" / "redline.db") as store:
        cases_a = {c.case_id: c.samples for c in store.cases(a)}
        cases_b = {c.case_id: c.samples for c in store.cases(b)}
        run_b = store.run(b)
    assert cases_b == cases_a == dict.fromkeys(CASES, 5)
    assert run_b.model_id == f"loopback:{CANDIDATE}"
    assert run_b.args["against"] == a
    requested = {r.body["model"] for r in llm_server.requests}
    assert requested == {"fake-model-2025-01-01", CANDIDATE}
    assert f"compared with run {a}" in out
    assert "only B fails: 1" in out and "s/c06" in out
    assert "only A fails: 1" in out and "s/c07" in out
    assert "both fail: 1 (likely case problems" in out and "s/c08" in out
    assert "cost per 1k calls" in out and "mean latency ms" in out
    assert f"redline compare {a} {b} --format markdown" in out


def test_compare_json_prices_each_side_from_the_price_table(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _baseline_and_candidate(project, capsys)
    capsys.readouterr()
    assert main(["compare", a, b, "--format", "json"]) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["split"]["only B fails"] == ["s/c06"]
    assert data["split"]["only A fails"] == ["s/c07"]
    assert data["likely_case_problems"] == ["s/c08"]
    assert data["significant_drops"] == ["s/c06"]
    with RunStore.open(project / ".redline" / "redline.db") as store:
        samples = {run: store.samples(run) for run in (a, b)}
    compared = set(CASES)
    for run, side, (p_in, p_out) in ((a, "a", (1.0, 2.0)), (b, "b", (3.0, 12.0))):
        answered = [s for s in samples[run] if s.case_id in compared]
        expected = sum(
            ((s.input_tokens or 0) * p_in + (s.output_tokens or 0) * p_out) / 1e6 for s in answered
        )
        total = data["total"][side]
        assert total["cost_usd"] == pytest.approx(expected)
        assert total["cost_per_1k_calls_usd"] == pytest.approx(expected / len(answered) * 1000)
        assert total["input_tokens"] == sum(s.input_tokens or 0 for s in answered)
        latencies = sorted(s.latency_ms or 0.0 for s in answered)
        assert total["p95_latency_ms"] == pytest.approx(
            latencies[math.ceil(0.95 * len(latencies)) - 1]
        )
    c09 = next(c for c in data["cases"] if c["case_id"] == "c09")
    assert c09["verdict_delta"]["truncated"] == 5
    assert c09["split"] == "undecided"
    assert data["total"]["verdict_delta"]["truncated"] == 5


def test_markdown_is_a_pull_request_table(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = _baseline_and_candidate(project, capsys)
    capsys.readouterr()
    assert main(["compare", a, b, "--format", "markdown"]) == 1
    md = capsys.readouterr().out
    assert md.startswith("## Model comparison: `loopback:fake-model-2025-01-01` → ")
    assert "| cost per 1k calls |" in md
    header = next(line for line in md.splitlines() if line.startswith("| case |"))
    assert "cost per 1k calls" in header and "p95 latency ms" in header
    assert "| only B fails | 1 | B broke these |" in md
    assert "**both fail** (likely case problems" in md and "`s/c08`" in md
    assert "1 case(s) dropped beyond sampling noise" in md
    row = next(line for line in md.splitlines() if line.startswith("| **s/c06"))
    assert "-100%" in row


def test_against_refuses_when_inputs_differ_and_names_them(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "s", "--quiet"]) == 1
    a = _latest(project)
    case_file = project / "s" / "c01.yaml"
    case_file.write_text(case_file.read_text() + "samples: 3\n", encoding="utf-8")
    (project / "s" / "system.txt").write_text("A reworded system prompt.\n", encoding="utf-8")
    before = llm_server.count()
    capsys.readouterr()
    assert main(["run", "--model", "candidate", "--against", a]) == 2
    err = capsys.readouterr().err
    assert "changed s/c01.yaml" in err and "changed s/system.txt" in err
    assert llm_server.count() == before, "nothing may be sent when the inputs differ"


def test_against_needs_a_model_and_takes_its_cases_from_the_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "s", "--case", "c01", "--case", "c06", "--samples", "3", "--quiet"]) == 0
    a = _latest(project)
    assert main(["run", "--against", a]) == 2
    assert "--model" in capsys.readouterr().err
    assert main(["run", "--model", "candidate", "--against", a, "--samples", "2"]) == 2
    assert "drop --samples" in capsys.readouterr().err
    # Two cases are fewer than the rule Content diffs need enough evidence asks for: the content
    # comparison is withheld (exit 3), but latency, tokens and cost are still shown.
    assert main(["run", "--model", "candidate", "--against", a, "--quiet"]) == 3
    out = capsys.readouterr().out
    with RunStore.open(project / ".redline" / "redline.db") as store:
        cases = {c.case_id: c.samples for c in store.cases(_latest(project))}
    assert cases == {"c01": 3, "c06": 3}
    assert "content comparison withheld" in out and "cost per 1k calls" in out


def test_unknown_price_is_unknown_not_zero(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = project / "redline.toml"
    toml.write_text(
        toml.read_text()
        .replace("[prices.candidate]", "[prices.unused]")
        .replace("unused]", '"loopback:other-2025-01-01"]'),
        encoding="utf-8",
    )
    assert parse_config(toml).price(f"loopback:{CANDIDATE}") is None
    assert main(["run", "s", "--case", "c01", "--quiet"]) == 0
    a = _latest(project)
    capsys.readouterr()
    assert main(["run", "--model", "candidate", "--against", a, "--quiet"]) == 3
    out = capsys.readouterr().out
    assert f"cost unknown: loopback:{CANDIDATE} has no price" in out
    capsys.readouterr()
    main(["compare", a, _latest(project), "--format", "json"])
    data = json.loads(capsys.readouterr().out)
    assert data["total"]["b"]["cost_usd"] is None
    assert data["total"]["a"]["cost_usd"] is not None
    assert RunResult.INCONCLUSIVE == "inconclusive"


def test_run_summary_and_reports_show_what_the_run_cost(
    project: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["run", "s", "--case", "c01", "--samples", "4", "--quiet"]) == 0
    out = capsys.readouterr().out
    run_id = _latest(project)
    with RunStore.open(project / ".redline" / "redline.db") as store:
        samples = store.samples(run_id)
    cost = sum(s.cost or 0.0 for s in samples)
    tokens_in = sum(s.input_tokens or 0 for s in samples)
    assert f"tokens in {tokens_in:,} / out" in out and "latency mean" in out
    assert main(["report", run_id, "--markdown"]) == 0
    md = capsys.readouterr().out
    assert f"{usd(cost)} \\({usd(cost / 4 * 1000)} per 1,000 calls\\)" in md
    html_file = tmp_path / "report.html"
    assert main(["report", run_id, "--html", str(html_file)]) == 0
    assert f"tokens in {tokens_in:,} / out" in html_file.read_text(encoding="utf-8")
