"""Why is this case red? Realistic histories on real git repositories and the loopback server.

Each scenario builds the history a team would have (runs on main, a branch, a migration
commit, a remote that is behind or missing), then asks for the cause of the red run.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import git
import pytest

from cause_repo import (
    BAD,
    BROKEN_PROMPT,
    CASE,
    CASE_YAML,
    FLAKY,
    GOOD,
    REWORDED_PROMPT,
    SUITE,
    History,
    histories,
)
from redline.cli import ExitCode, main
from redline.deciding.cause import ArmKind, Bar, Change, Settings
from redline.vocabulary.causes import Cause
from redline.vocabulary.records import RunKind
from servers import LoopbackLLMServer

MakeHistory = Callable[..., History]


@pytest.fixture
def make_history(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    loopback_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[MakeHistory]:
    """Histories whose run ids (hence sample seeds, hence the flaky model's draws) are fixed."""
    with histories(tmp_path, llm_server, monkeypatch, "a") as make:
        yield make


@pytest.fixture
def history(make_history: MakeHistory) -> History:
    return make_history()


def _arm(diagnosis: object, kind: ArmKind) -> tuple[int, int]:
    from redline.deciding.cause import Diagnosis

    assert isinstance(diagnosis, Diagnosis)
    arm = next(a for a in diagnosis.arms if a.kind is kind)
    return arm.passes, arm.samples


def test_prompt_regression_on_a_branch(history: History) -> None:
    passing = history.run()
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts in the refund reply")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.PROMPT
    assert d.reference.run is not None and d.reference.run.id == passing.id
    assert d.reference.branch == "main"
    assert [c.kind for c in d.changes] == [Change.PROMPT]
    ref_passes, ref_n = _arm(d, ArmKind.REFERENCE_PROMPT)
    red_passes, red_n = _arm(d, ArmKind.RED)
    assert ref_passes == ref_n >= 10 and red_passes == 0 and red_n >= 10
    assert d.p_values["reference-prompt"] < 0.001
    # Every arm is its own stored rerun linked to the red run; the red run is untouched.
    for arm in d.arms:
        assert arm.run_id is not None
        stored = history.store.run(arm.run_id)
        assert (stored.kind, stored.parent_id) == (RunKind.RERUN, red.id)
    assert len(history.store.samples(red.id)) == 5
    assert history.store.triage(red.id)[(SUITE, CASE)].state == "prompt"


def test_model_regression_after_a_migration_commit(history: History) -> None:
    for _ in range(3):
        history.run(passing=True)
    history.pin(BAD)
    history.commit("migrate to the new model")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.MODEL, d.sentence
    assert [c.kind for c in d.changes] == [Change.MODEL]
    assert _arm(d, ArmKind.REFERENCE_MODEL)[0] == _arm(d, ArmKind.REFERENCE_MODEL)[1] >= 10
    assert _arm(d, ArmKind.RED)[0] == 0
    # The unchanged prompt on the new model fails too: that must not clear the model.
    assert ArmKind.REFERENCE_PROMPT not in {a.kind for a in d.arms}


def test_migration_to_a_flaky_model_is_a_model_regression(history: History) -> None:
    for _ in range(3):
        history.run(passing=True)
    history.pin(f"old:{GOOD}")
    history.commit("serve the model from the old deployment")
    history.run(passing=True)
    history.pin(FLAKY)
    history.commit("migrate to the new model")
    red = history.run(passing=False)

    d = history.analyse(red, Settings(budget=80))

    assert d.cause is Cause.MODEL, d.sentence
    passes, samples = _arm(d, ArmKind.RED)
    assert 0 < passes < samples >= 20  # one batch of a flaky model cannot convict it


def test_model_change_whose_old_model_is_gone_says_so_and_skips_that_arm(
    history: History,
) -> None:
    history.pin(f"old:{GOOD}")
    history.commit("the old deployment")
    history.run(passing=True)
    history.pin(BAD, old_provider=False)
    history.commit("migrate and drop the old deployment")
    red = history.run()

    d = history.analyse(red, Settings(budget=20))

    skipped = next(a for a in d.arms if a.kind is ArmKind.REFERENCE_MODEL)
    assert skipped.skipped is not None and "not configured any more" in skipped.skipped
    assert skipped.samples == 0
    assert d.cause is Cause.UNDECIDED  # neither "case" nor "noise" while the model is untested
    assert "model cannot be ruled out" in d.sentence


def test_case_at_fault_fails_on_the_reference_prompt_too(make_history: MakeHistory) -> None:
    history = make_history(needle="12.000")  # never in any answer
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(REWORDED_PROMPT)
    history.commit("friendlier wording")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.CASE, d.sentence
    assert d.reference.run is None and "main" in d.reference.reason
    assert _arm(d, ArmKind.REFERENCE_PROMPT) == (0, 10)
    assert "the case or its assertion is at fault" in d.sentence


def test_flaky_case_with_nothing_changed_is_noise(make_history: MakeHistory) -> None:
    history = make_history(model=FLAKY)
    history.run(passing=True)
    red = history.run(passing=False)

    d = history.analyse(red)

    assert d.cause is Cause.NOISE, d.sentence
    assert d.changes == ()
    passes, samples = _arm(d, ArmKind.RED)
    assert samples >= 20 and 0.55 < passes / samples < 1.0
    assert "marginal" in d.sentence and "Raise its samples or retire it" in d.sentence


def test_flaky_case_with_a_harmless_prompt_change_is_noise(make_history: MakeHistory) -> None:
    history = make_history(model=FLAKY)
    history.run(passing=True)
    history.set_prompt(REWORDED_PROMPT)
    history.commit("friendlier wording")
    red = history.run(passing=False)

    d = history.analyse(red, Settings(budget=200))

    assert d.cause is Cause.NOISE, d.sentence
    ref, mine = _arm(d, ArmKind.REFERENCE_PROMPT), _arm(d, ArmKind.RED)
    assert ref[1] == mine[1] >= 40  # "the same rate" needs both arms well sampled
    assert "by less than 15 points" in d.sentence


def test_changed_case_file_is_never_a_regression(history: History) -> None:
    history.run(passing=True)
    history.write(f"cases/{SUITE}/{CASE}.yaml", CASE_YAML.format(needle="12,000 IDR for Budi"))
    history.commit("stricter amount check")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.CASE_CHANGED
    assert [c.kind for c in d.changes] == [Change.CASE]
    assert d.arms == ()
    assert not history.store.runs(kind=RunKind.RERUN)  # nothing compared, nothing run


def test_comment_only_edit_of_the_case_file_is_not_a_change(history: History) -> None:
    history.run(passing=True)
    case_file = history.root / "cases" / SUITE / f"{CASE}.yaml"
    case_file.write_text("# reviewed 2026-11\n" + case_file.read_text(), encoding="utf-8")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("reword; note on the case")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.PROMPT
    assert [c.kind for c in d.changes] == [Change.PROMPT]


def _with_origin(history: History, tmp_path: Path) -> git.Repo:
    origin = git.Repo.init(tmp_path / "origin.git", bare=True, initial_branch="main")
    history.repo.create_remote("origin", str(origin.git_dir))
    history.repo.git.push("origin", "main")
    history.repo.git.remote("set-head", "origin", "main")
    return origin


def test_run_on_a_branch_ahead_of_origin_main(history: History, tmp_path: Path) -> None:
    history.write("README.md", "refunds\n")
    base = history.commit("docs")
    _with_origin(history, tmp_path)
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    red = history.run()
    # The user has moved on: back on main with more commits since.
    history.repo.git.checkout("main")
    history.write("README.md", "refunds, more\n")
    history.commit("more docs")

    d = history.analyse(red)

    assert d.reference.revision == base
    assert "origin/main" in d.reference.reason
    assert d.cause is Cause.PROMPT


def test_local_main_ahead_of_origin_main(history: History, tmp_path: Path) -> None:
    suite_commit = history.repo.head.commit.hexsha
    # origin/main is behind: at the first commit, where the suite does not exist yet.
    origin = git.Repo.init(tmp_path / "origin.git", bare=True, initial_branch="main")
    history.repo.create_remote("origin", str(origin.git_dir))
    history.repo.git.push("origin", "HEAD~1:refs/heads/main")
    history.repo.git.fetch("origin")
    history.repo.git.remote("set-head", "origin", "main")
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    red = history.run()

    d = history.analyse(red)

    assert d.reference.revision == suite_commit
    assert "ahead of origin/main" in d.reference.reason
    assert d.cause is Cause.PROMPT


def test_repository_without_a_remote(history: History) -> None:
    base = history.repo.head.commit.hexsha
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    red = history.run()

    d = history.analyse(red)

    assert d.reference.revision == base and d.reference.branch == "main"
    assert "no remote" in d.reference.reason
    assert d.cause is Cause.PROMPT


@pytest.mark.parametrize("flag", [["--json"], ["--format", "json"]])
def test_cli_json_names_reference_changes_arms_and_conclusion(
    history: History, capsys: pytest.CaptureFixture[str], flag: list[str]
) -> None:
    history.run()
    history.repo.git.checkout("-b", "feature")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts")
    red = history.run()
    capsys.readouterr()

    assert main(["rerun", red.id, CASE, *flag, "--budget", "20"]) == ExitCode.GREEN

    data = json.loads(capsys.readouterr().out)
    assert data["conclusion"] == "prompt"
    assert data["reference"]["revision"] == history.repo.commit("main").hexsha
    assert data["reference"]["reason"]
    assert data["changes"] == ["prompt"]
    labels = [a["label"] for a in data["arms"]]
    assert len(labels) == 2
    for arm in data["arms"]:
        low, high = arm["interval"]
        assert 0 <= low <= arm["passes"] / arm["samples"] <= high <= 1


def test_cli_prints_the_reference_and_exits_0_whatever_the_conclusion(
    history: History, capsys: pytest.CaptureFixture[str]
) -> None:
    history.run(passing=True)
    history.write(f"cases/{SUITE}/{CASE}.yaml", CASE_YAML.format(needle="IDR 12,000"))
    history.commit("stricter")
    red = history.run()
    capsys.readouterr()
    assert main(["rerun", red.id, CASE]) == ExitCode.GREEN
    out = capsys.readouterr().out
    assert "reference:" in out and "on main" in out
    assert "conclusion: case-changed" in out


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--confidence", "1.5"], "confidence"),
        (["--budget", "0"], "budget"),
        (["--reference", "no-such-rev"], "unknown revision"),
    ],
)
def test_cli_bad_input_is_exit_2(
    history: History, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    red = history.run()
    assert main(["rerun", red.id, CASE, *extra]) == ExitCode.USAGE
    assert message in capsys.readouterr().err
    assert not history.store.runs(kind=RunKind.RERUN)


def test_run_on_main_itself_compares_with_the_commit_before_the_last_change(
    history: History,
) -> None:
    before = history.repo.head.commit.hexsha
    history.set_prompt(BROKEN_PROMPT)
    history.commit("shorter amounts, straight on main")
    history.write("README.md", "unrelated\n")
    history.commit("docs")
    red = history.run()  # no run ever passed; the run is on main, not on a branch

    d = history.analyse(red)

    assert d.reference.revision == before
    assert "the commit before the last change to the suite or its config" in d.reference.reason
    assert d.cause is Cause.PROMPT


def test_a_new_case_that_never_passed_is_compared_with_itself(
    make_history: MakeHistory,
) -> None:
    history = make_history(needle="12.000")
    red = history.run()

    d = history.analyse(red)

    assert d.reference.revision == history.repo.head.commit.hexsha
    assert "the suite first appeared" in d.reference.reason
    assert d.changes == () and d.cause is Cause.CASE


def test_changed_fixture_is_a_vars_change_and_nothing_is_compared(history: History) -> None:
    case = history.root / "cases" / SUITE / f"{CASE}.yaml"
    history.write(f"cases/{SUITE}/fixtures/name.txt", "Ana")
    case.write_text(
        case.read_text().replace("name: Ana", "name: file://fixtures/name.txt"), "utf-8"
    )
    history.commit("the customer's name as a fixture, verbatim")
    history.run(passing=True)
    history.write(f"cases/{SUITE}/fixtures/name.txt", "Ana María")
    history.set_prompt(BROKEN_PROMPT)
    history.commit("new fixture text and a shorter prompt")
    red = history.run()

    d = history.analyse(red)

    assert d.cause is Cause.CASE_CHANGED
    assert {c.kind for c in d.changes} == {Change.VARS, Change.PROMPT}
    assert any(c.detail == "fixture name.txt" for c in d.changes)


def test_a_raised_bar_is_a_settings_change_judged_at_the_new_bar(
    make_history: MakeHistory,
) -> None:
    history = make_history(model=FLAKY)
    case = history.root / "cases" / SUITE / f"{CASE}.yaml"
    case.write_text(case.read_text().replace("tier: contract", "tier: quality"), "utf-8")
    history.commit("one miss allowed")
    history.run(passing=True)
    case.write_text(case.read_text().replace("samples: 5", "samples: 5\nrequired: 5"), "utf-8")
    history.commit("no miss allowed any more")
    red = history.run(passing=False)

    d = history.analyse(red)

    assert [(c.kind, c.detail) for c in d.changes] == [(Change.SETTINGS, "case required: None → 5")]
    assert d.cause is Cause.NOISE, d.sentence  # same rate; marginal at its new bar of 5/5
    assert d.bar == Bar(5, 5)


def test_a_run_on_uncommitted_edits_is_compared_with_its_commit(history: History) -> None:
    committed = history.repo.head.commit.hexsha
    history.set_prompt(BROKEN_PROMPT)  # edited, not committed, and run
    red = history.run()
    assert history.store.run(red.id).git_dirty

    d = history.analyse(red)

    assert d.reference.revision == committed
    assert "uncommitted edits" in d.reference.reason
    assert [c.kind for c in d.changes] == [Change.PROMPT]
    assert d.cause is Cause.PROMPT


def test_a_provider_that_only_fails_leaves_it_undecided_and_says_why(history: History) -> None:
    history.run(passing=True)
    history.set_prompt("MODE:500 Your refund of 12,000 IDR for {{name}} was approved.")
    history.commit("a prompt the server cannot answer")
    red = history.run()

    d = history.analyse(red, Settings(budget=10))

    assert d.cause is Cause.UNDECIDED
    assert "no content sample" in d.sentence and d.more_samples is None
