"""Sequential sampling: the stopping rule, the case-file syntax, and the runner drawing samples."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from redline.config import parse_config
from redline.deciding.compare import compare_runs
from redline.errors import ProblemsError
from redline.running.runner import RunOptions, run_suites
from redline.running.seeds import seed_warning
from redline.running.store import RunStore
from redline.suite.cases import load_suite
from redline.vocabulary.records import CaseOutcome, RunResult
from redline.vocabulary.sequential import SamplingSpec, SequentialPlan
from servers import LoopbackLLMServer

KEY_ENV = "REDLINE_LOOPBACK_KEY"
JSON_ASSERTS = "  - type: is-json\n"


def exact_outcomes(plan: SequentialPlan, p: float) -> tuple[dict[CaseOutcome, float], float]:
    """Every path of the rule at true pass rate p: the chance of each result, mean samples."""
    paths = {(0, 0): 1.0}
    result = dict.fromkeys(CaseOutcome, 0.0)
    mean = 0.0
    while paths:
        following: dict[tuple[int, int], float] = {}
        for (passes, failures), chance in paths.items():
            decision = plan.decide(passes, failures)
            if decision is not None:
                result[decision] += chance
                mean += chance * (passes + failures)
                continue
            up, down = (passes + 1, failures), (passes, failures + 1)
            following[up] = following.get(up, 0.0) + chance * p
            following[down] = following.get(down, 0.0) + chance * (1 - p)
        paths = following
    return result, mean


def test_contract_fails_on_the_first_broken_sample_and_passes_at_min() -> None:
    plan = SequentialPlan(min=3, max=10, bar=1.0, contract=True)
    assert plan.decide(0, 1) is CaseOutcome.FAIL
    assert plan.decide(5, 1) is CaseOutcome.FAIL
    assert plan.decide(2, 0) is None
    assert plan.decide(3, 0) is CaseOutcome.PASS
    # Transport samples say nothing: draw again, and give up undecided at max.
    assert plan.decide(2, 0, other=1) is None
    assert plan.decide(2, 0, other=8) is CaseOutcome.INCONCLUSIVE


@pytest.mark.parametrize(
    "plan",
    [SequentialPlan(), SequentialPlan(max=20, false_pass=0.10), SequentialPlan(bar=2 / 3)],
    ids=["default", "more-power", "two-of-three-bar"],
)
def test_stated_error_rates_hold_at_the_edges_of_the_band(plan: SequentialPlan) -> None:
    low, high = plan.band
    at_high, _ = exact_outcomes(plan, high)
    at_low, _ = exact_outcomes(plan, low)
    assert at_high[CaseOutcome.FAIL] <= plan.false_fail
    assert at_low[CaseOutcome.PASS] <= plan.false_pass


def test_a_case_far_from_its_bar_stops_early_and_one_near_it_draws_more() -> None:
    plan = SequentialPlan()
    perfect, perfect_mean = exact_outcomes(plan, 1.0)
    broken, broken_mean = exact_outcomes(plan, 0.0)
    near, near_mean = exact_outcomes(plan, plan.bar)
    assert perfect[CaseOutcome.PASS] == pytest.approx(1.0)
    assert perfect_mean <= 4
    assert broken[CaseOutcome.FAIL] == pytest.approx(1.0)
    assert broken_mean == 3
    assert near_mean > perfect_mean + 2
    assert near[CaseOutcome.MARGINAL] > 0.25
    # A rate inside the band that reaches max undecided is marginal, never red.
    assert plan.decide(7, 3) is CaseOutcome.MARGINAL


def test_quality_cases_are_marginal_but_not_inconclusive_without_transport() -> None:
    plan = SequentialPlan(min=3, max=6)
    assert plan.decide(4, 2) is CaseOutcome.MARGINAL
    assert plan.decide(4, 1, other=1) is CaseOutcome.INCONCLUSIVE


def _suite(root: Path, suite_extra: str, case_extra: str = "") -> Path:
    folder = root / "s"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: s\nprompt:\n  system: system.txt\n  user: '{{q}}'\nmodel: fake\n"
        + textwrap.dedent(suite_extra),
        encoding="utf-8",
    )
    (folder / "c.yaml").write_text(
        "id: c\nprovenance: {ticket: T-1, reported: 2026-01-02, note: test}\n"
        "vars:\n  q: hi\n" + textwrap.dedent(case_extra) + "assert:\n" + JSON_ASSERTS,
        encoding="utf-8",
    )
    return folder


def test_case_files_say_samples_as_a_range_with_a_bar_and_margin(tmp_path: Path) -> None:
    suite = load_suite(
        _suite(tmp_path, "tier: quality\nsamples: {min: 2, max: 12, margin: 0.1, bar: 0.9}\n")
    )
    plan = suite.cases[0].sampling
    assert plan == SequentialPlan(min=2, max=12, bar=0.9, margin=0.1)
    assert suite.cases[0].samples == 12
    contract = load_suite(_suite(tmp_path / "k", "tier: contract\nsamples: {max: 8}\n"))
    assert contract.cases[0].sampling == SamplingSpec(max=8).plan("contract")
    fixed = load_suite(_suite(tmp_path / "f", "samples: {min: 3}\n", "samples: 4\n"))
    assert fixed.cases[0].sampling is None and fixed.cases[0].samples == 4


def test_bad_ranges_are_reported_with_their_line(tmp_path: Path) -> None:
    folder = _suite(
        tmp_path,
        "tier: quality\nsamples: {min: 9, max: 4}\n",
        "samples: {min: 3, max: 5, maximum: 9}\nrequired: 2\n",
    )
    with pytest.raises(ProblemsError) as caught:
        load_suite(folder)
    messages = [(p.path.split("/")[-1], p.line, p.message) for p in caught.value.problems]
    assert ("suite.yaml", 7, "`samples.min` (9) is more than `samples.max` (4)") in messages
    assert any(m[0] == "c.yaml" and m[1] == 5 and "maximum" in m[2] for m in messages)
    assert any(m[0] == "c.yaml" and m[1] == 6 and "count varies" in m[2] for m in messages)


def _config(root: Path, server: LoopbackLLMServer, extra: str = "") -> None:
    (root / "redline.toml").write_text(
        server.redline_toml(key_env=KEY_ENV, concurrency=4, extra=extra), encoding="utf-8"
    )


def _write_rate_suite(root: Path, name: str, tier: str, rates: dict[str, int]) -> Path:
    folder = root / name
    folder.mkdir(parents=True)
    (folder / "system.txt").write_text("Answer with JSON.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        f"name: {name}\nprompt:\n  system: system.txt\n  user: '{{{{q}}}}'\nmodel: fake\n"
        f"tier: {tier}\nsamples: {{min: 3, max: 12}}\nseed: frozen\n",
        encoding="utf-8",
    )
    for case_id, rate in rates.items():
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\nprovenance: {{ticket: T-1, reported: 2026-01-02, note: t}}\n"
            f"vars:\n  q: 'RATE:{rate} {case_id}'\nassert:\n{JSON_ASSERTS}",
            encoding="utf-8",
        )
    return folder


def test_the_runner_stops_sure_cases_early_and_samples_flaky_ones_more(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackLLMServer() as server:
        _config(tmp_path, server)
        config = parse_config(tmp_path / "redline.toml")
        quality = _write_rate_suite(
            tmp_path, "q", "quality", {"sure": 100, "flaky": 75, "broken": 0}
        )
        contract = _write_rate_suite(tmp_path, "k", "contract", {"solid": 100, "cracked": 60})
        suites = [load_suite(quality, config), load_suite(contract, config)]
        with RunStore.open(tmp_path / "store.db") as store:
            record = run_suites(suites, config, store, RunOptions(concurrency=4))
            cases = {c.case_id: c for c in store.cases(record.id)}
            stored = len(store.samples(record.id))
    assert cases["sure"].result is CaseOutcome.PASS and cases["sure"].samples <= 4
    assert cases["broken"].result is CaseOutcome.FAIL and cases["broken"].samples == 3
    assert cases["solid"].result is CaseOutcome.PASS and cases["solid"].samples == 3
    assert cases["cracked"].result is CaseOutcome.FAIL and cases["cracked"].samples <= 4
    assert cases["flaky"].samples > cases["sure"].samples + 2
    assert cases["flaky"].samples <= 12
    assert stored == sum(c.samples for c in cases.values())
    assert record.result is RunResult.RED
    assert record.args["frozen_seeds"] == {"q": 0, "k": 0}


def test_frozen_runs_compare_without_a_p_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    rates = {f"c{i}": 100 if i % 3 else 50 for i in range(9)}
    with LoopbackLLMServer() as server:
        _config(tmp_path, server)
        config = parse_config(tmp_path / "redline.toml")
        suites = [load_suite(_write_rate_suite(tmp_path, "q", "quality", rates), config)]
        with RunStore.open(tmp_path / "store.db") as store:
            first = run_suites(suites, config, store, RunOptions())
            second = run_suites(suites, config, store, RunOptions())
            seeds = [sorted(s.seed or 0 for s in store.samples(r.id)) for r in (first, second)]
            comparison = compare_runs(store, first.id, second.id)
    assert seeds[0] == seeds[1]
    assert comparison.same_draws
    assert comparison.deltas and all(d.p_text == "n/a (same draws)" for d in comparison.deltas)
    assert not comparison.significant_drops


def test_frozen_seeds_on_a_seedless_api_are_called_out(tmp_path: Path) -> None:
    with LoopbackLLMServer() as server:
        _config(tmp_path, server)
        config = parse_config(tmp_path / "redline.toml")
        suite = load_suite(_write_rate_suite(tmp_path, "q", "quality", {"c": 100}), config)
        assert seed_warning([suite], config, config.model("fake")) is None
        warning = seed_warning([suite], config, config.model("fake-anthropic"))
    assert warning is not None and "takes no seed" in warning


def test_adaptive_flag_samples_fixed_cases_sequentially(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackLLMServer() as server:
        _config(tmp_path, server)
        folder = _suite(tmp_path, "tier: contract\nsamples: 7\n")
        command = [sys.executable, "-m", "redline", "run", str(folder), "--quiet"]
        adaptive = subprocess.run(
            [*command, "--adaptive"], cwd=tmp_path, capture_output=True, text=True
        )
        both = subprocess.run(
            [*command, "--adaptive", "--samples", "4"], cwd=tmp_path, capture_output=True, text=True
        )
        with RunStore.open(tmp_path / ".redline" / "redline.db") as store:
            run = store.runs()[0]
            case = store.cases(run.id)[0]
    assert adaptive.returncode == 0, adaptive.stderr
    assert case.samples == 3  # a contract case whose first samples all pass stops at min
    assert both.returncode == 2 and "use one of them" in both.stderr
