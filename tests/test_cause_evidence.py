"""Stored evidence, drift and settings: histories with nightlies on real git repositories.

Every run is a real `redline run` against the loopback server; the nightlies before a red
run are the evidence the cause analysis reuses (same sample configuration, same model id).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from cause_repo import CASE, FLAKY, GOOD, REWORDED_PROMPT, SUITE, History, histories
from redline.cli import ExitCode, main
from redline.deciding.arms import look_shares
from redline.deciding.cause import ArmKind, Bar, Settings
from redline.running import exchange
from redline.running.runner import RunOptions, run_suites, sample_seed
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import CaseOutcome, RunKind, RunRecord
from servers import LoopbackLLMServer, keeps_answer

MakeHistory = Callable[..., History]


@pytest.fixture
def make_history(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[MakeHistory]:
    with histories(tmp_path, llm_server, monkeypatch, "e") as make:
        yield make


def _nightlies(history: History, n: int) -> list[RunRecord]:
    return [history.run() for _ in range(n)]


def _run_with(history: History, samples: int, passing: bool, rate: float) -> RunRecord:
    """A run whose draws of the case at `rate` pass (or fail) a bar of samples − 1."""
    config = history.config
    model = config.models["fake"].name
    for n in range(20_000):
        run_id = f"{'p' if passing else 'f'}{len(history.store.runs()):03d}{n:08d}"
        seeds = [sample_seed(run_id, SUITE, CASE, i) for i in range(samples)]
        kept = sum(keeps_answer(model, s, rate) for s in seeds)
        if (kept >= samples - 1) is passing:
            suites = load_suites(config.suites, config)
            return run_suites(suites, config, history.store, RunOptions(run_id=run_id))
    raise AssertionError("no run id gives that result")


def test_drift_on_a_pinned_id_is_named_with_the_providers_own_description(
    make_history: MakeHistory,
) -> None:
    history = make_history()
    history.server.fingerprint = "fp_44709d6fcb"
    history.server.server_version = "vllm/0.6.3"
    _nightlies(history, 4)
    # That night the server behind the same pinned id answers differently.
    history.server.model_pass_rates[GOOD] = 0.0
    history.server.fingerprint = "fp_b28b39ffa8"
    red = history.run()
    assert history.case(red).result is CaseOutcome.FAIL
    stored = history.store.samples(red.id, CASE)[0]
    assert (stored.system_fingerprint, stored.server_version) == ("fp_b28b39ffa8", "vllm/0.6.3")
    # The next morning it is back.
    history.server.model_pass_rates[GOOD] = 1.0

    d = history.analyse(red)

    assert d.cause is Cause.DRIFT, d.sentence
    assert d.changes == ()
    assert "nothing in your repository changed" in d.sentence
    assert "loopback:good-model" in d.sentence
    assert "not a rare miss" in d.sentence
    assert "fp_44709d6fcb → fp_b28b39ffa8" in d.sentence
    assert d.history.before == (15, 15)  # three nightlies; the reference run is not counted
    assert d.p_values["drift in the red run"] < 1e-4
    assert history.store.triage(red.id)[(SUITE, CASE)].state == "drift"


def test_drift_that_persists_is_drift_not_a_case_at_fault(make_history: MakeHistory) -> None:
    history = make_history()
    _nightlies(history, 4)
    history.server.model_pass_rates[GOOD] = 0.0
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.DRIFT, d.sentence
    red_arm = next(a for a in d.arms if a.kind is ArmKind.RED)
    assert red_arm.drawn_counts == (0, 10)  # decided at the first look
    assert "since the red run" in d.sentence


def test_a_flaky_case_red_by_chance_with_stored_nightlies_is_noise_not_drift(
    make_history: MakeHistory,
) -> None:
    history = make_history(model=FLAKY)
    nightlies = _nightlies(history, 6)
    red = history.run(passing=False)

    d = history.analyse(red)

    assert d.cause is Cause.NOISE, d.sentence
    red_arm = next(a for a in d.arms if a.kind is ArmKind.RED)
    reference = d.reference.run
    assert reference is not None
    # Every nightly but the reference counts; the red run never does.
    expected = {r.id for r in nightlies} - {reference.id}
    assert {r.run_id for r in red_arm.stored} == expected
    assert red.id not in {r.run_id for r in red_arm.stored}
    assert "one arm: the case passes at" in d.sentence


def test_a_raised_bar_above_the_measured_rate_is_settings(make_history: MakeHistory) -> None:
    history = make_history(model=FLAKY)
    case = history.root / "cases" / SUITE / f"{CASE}.yaml"
    case.write_text(
        case.read_text().replace("tier: contract\nsamples: 5\n", "tier: quality\n"), "utf-8"
    )
    suite = history.root / "cases" / SUITE / "suite.yaml"
    suite.write_text(suite.read_text().replace("samples: 5", "samples: 4"), "utf-8")
    history.commit("a 3-of-4 bar")
    _nightlies(history, 6)
    suite.write_text(suite.read_text().replace("samples: 4", "samples: 10"), "utf-8")
    history.commit("more samples per case")
    red = _run_with(history, 10, passing=False, rate=0.8)

    d = history.analyse(red, Settings(budget=80))

    assert d.cause is Cause.SETTINGS, d.sentence
    assert d.bar == Bar(10, 9) and d.history.old_bar == Bar(4, 3)
    assert "from 3/4 (75%) to 9/10 (90%)" in d.sentence
    red_arm = next(a for a in d.arms if a.kind is ArmKind.RED)
    assert len(red_arm.stored) == 5  # the nightlies under the old bar are samples of the same rate
    data = d.to_json()
    assert data["settings"]["old_bar"] == {"samples": 4, "required": 3}
    assert data["settings"]["bar"] == {"samples": 10, "required": 9}


def test_identical_flaky_arms_with_agreeing_history_are_noise_and_say_what_counted(
    make_history: MakeHistory, capsys: pytest.CaptureFixture[str]
) -> None:
    history = make_history(model=FLAKY)
    nightlies = _nightlies(history, 8)
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(REWORDED_PROMPT)
    history.commit("friendlier wording")
    red = history.run(passing=False)
    capsys.readouterr()

    assert main(["rerun", red.id, CASE, "--json"]) == ExitCode.GREEN

    data = json.loads(capsys.readouterr().out)
    assert data["conclusion"] == "noise", data["sentence"]
    assert data["drift"] is None and data["settings"] is None
    ref_arm = next(a for a in data["arms"] if a["kind"] == "reference-prompt")
    ids = {r["run_id"] for r in ref_arm["stored_runs"]}
    assert ids and ids <= {r.id for r in nightlies}
    assert ref_arm["stored_samples"] == sum(r["samples"] for r in ref_arm["stored_runs"])
    # Drawn now: at least a batch, at most what the plan (and the cost estimate) said.
    assert 10 <= ref_arm["samples"] - ref_arm["stored_samples"] <= ref_arm["most_drawn"]
    assert sum(a["most_drawn"] for a in data["arms"]) <= 2 * 2 * 40
    assert "stored runs" in data["sentence"]


def test_a_rerun_of_an_undecided_case_continues_every_arm_from_what_is_stored(
    make_history: MakeHistory,
) -> None:
    history = make_history(model=FLAKY)
    history.run(passing=True)
    history.set_prompt(REWORDED_PROMPT)
    history.commit("friendlier wording")
    red = history.run(passing=False)
    first = history.analyse(red, Settings(budget=10))
    assert first.cause is Cause.UNDECIDED, first.sentence

    second = history.analyse(red, Settings(budget=10))

    for kind in (ArmKind.REFERENCE_PROMPT, ArmKind.RED):
        before = next(a for a in first.arms if a.kind is kind)
        after = next(a for a in second.arms if a.kind is kind)
        assert before.run_id in {r.run_id for r in after.stored}
        assert after.samples >= before.samples + 10
        stored_run = history.store.run(str(before.run_id))
        assert (stored_run.kind, stored_run.parent_id) == (RunKind.RERUN, red.id)


def test_stored_evidence_never_mixes_models_or_prompts(make_history: MakeHistory) -> None:
    history = make_history(model=FLAKY)
    history.pin(GOOD)
    history.commit("a better model for a while")
    _nightlies(history, 3)  # another model id: not evidence of the flaky one
    history.pin(FLAKY)
    history.commit("back")
    history.run(passing=True)
    history.set_prompt(REWORDED_PROMPT)
    _nightlies(history, 2)  # uncommitted prompt edits: another configuration
    history.set_prompt("MODE:echo Your refund of 12,000 IDR for {{name}} was approved.")
    red = history.run(passing=False)

    d = history.analyse(red)

    assert all(not a.stored for a in d.arms), [a.stored for a in d.arms]


def test_the_sample_self_description_survives_export_and_import(
    make_history: MakeHistory, tmp_path: Path
) -> None:
    history = make_history()
    history.server.fingerprint = "fp_1"
    history.server.server_version = "llama.cpp/b4100"
    run = history.run()
    out = tmp_path / "export"
    exchange.export_run(history.store, run.id, out)
    with RunStore.open(tmp_path / "other.db") as other:
        exchange.import_run(other, out)
        sample = other.samples(run.id, CASE)[0]
        case = other.case(run.id, SUITE, CASE)
    assert (sample.system_fingerprint, sample.server_version) == ("fp_1", "llama.cpp/b4100")
    assert case is not None and case.config_hash == history.case(run).config_hash != ""


def test_the_nightly_report_counts_the_cases_that_drifted_since_last_night(
    make_history: MakeHistory, capsys: pytest.CaptureFixture[str]
) -> None:
    history = make_history()
    _nightlies(history, 4)
    history.server.model_pass_rates[GOOD] = 0.0
    red = history.run()
    capsys.readouterr()

    assert main(["report", red.id, "--markdown"]) == ExitCode.GREEN

    out = capsys.readouterr().out
    assert "1 case drifted since last night: nothing it reads changed" in out
    assert f"{SUITE}/{CASE}" in out and "loopback:good-model" in out


def test_a_red_night_after_a_prompt_change_is_not_counted_as_drift(
    make_history: MakeHistory, capsys: pytest.CaptureFixture[str]
) -> None:
    history = make_history()
    _nightlies(history, 4)
    history.set_prompt("MODE:echo Your refund of 12k for {{name}} was approved.")
    history.commit("shorter amounts")
    red = history.run()
    capsys.readouterr()
    main(["report", red.id, "--markdown"])
    assert "drifted since last night" not in capsys.readouterr().out


def test_a_raised_bar_is_settings_when_the_reference_already_has_the_new_bar(
    make_history: MakeHistory,
) -> None:
    history = make_history(model=FLAKY)
    case = history.root / "cases" / SUITE / f"{CASE}.yaml"
    case.write_text(
        case.read_text().replace("tier: contract\nsamples: 5\n", "tier: quality\n"), "utf-8"
    )
    suite = history.root / "cases" / SUITE / "suite.yaml"
    suite.write_text(suite.read_text().replace("samples: 5", "samples: 4"), "utf-8")
    history.commit("a 3-of-4 bar")
    _nightlies(history, 8)
    suite.write_text(suite.read_text().replace("samples: 4", "samples: 10"), "utf-8")
    history.commit("more samples per case")
    passed = _run_with(history, 10, passing=True, rate=0.8)  # a lucky night at 9 of 10
    red = _run_with(history, 10, passing=False, rate=0.8)

    d = history.analyse(red)

    assert d.reference.run is not None and d.reference.run.id == passed.id
    assert d.changes == ()  # nothing changed since the lucky night
    assert d.cause is Cause.SETTINGS, d.sentence
    assert d.history.old_bar == Bar(4, 3)
    assert "from 3/4 (75%) to 9/10 (90%)" in d.sentence


def test_a_reference_with_stored_nightlies_leaves_its_draws_to_your_configuration(
    make_history: MakeHistory,
) -> None:
    history = make_history(model=FLAKY)
    _nightlies(history, 8)
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(REWORDED_PROMPT)
    history.commit("friendlier wording")
    red = history.run(passing=False)

    d = history.analyse(red, Settings(budget=40, batch=40))

    ref = next(a for a in d.arms if a.kind is ArmKind.REFERENCE_PROMPT)
    mine = next(a for a in d.arms if a.kind is ArmKind.RED)
    assert ref.stored_counts[1] >= 30 and mine.stored_counts[1] == 0
    drawn = [ref.drawn_counts[1], mine.drawn_counts[1]]
    # Your configuration has no stored run: Step 1 plans for the evidence "noise on
    # balance" needs, up to twice the 2 × 40, shared so both arms end with about as many.
    assert drawn == look_shares([(ref.model_id, ref.stored_counts[1]), (mine.model_id, 0)], 40, 40)
    assert [ref.most, mine.most] == drawn
    assert sum(drawn) == 160 and drawn[0] >= 10 and drawn[1] > 80
    assert abs(ref.samples - mine.samples) <= 1
    assert {r.parent_id for r in history.store.runs() if r.kind is RunKind.RERUN} == {red.id}
