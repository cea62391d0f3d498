"""Run options and a run's stored arguments: one conversion, both ways."""

from __future__ import annotations

from redline.running.options import RunOptions
from redline.vocabulary.records import RunKind


def test_every_recorded_option_reads_back_from_the_stored_arguments() -> None:
    options = RunOptions(
        suites=("cases/a", "cases/b"),
        case_ids=("c1", "c2"),
        samples=7,
        tier="quality",
        model_alias="candidate",
        shard=(2, 3),
        replay="0123abcd",
        judge=True,
        judge_blocks=True,
        adaptive=True,
        case_samples={"a/c1": 4},
        against="feed0123",
        args={"triage": True, "label": "arm"},
    )
    stored = options.stored_args()
    assert stored["shard"] == [2, 3] and stored["model"] == "candidate"
    assert stored["triage"] is True
    assert RunOptions.from_stored(stored) == options


def test_what_a_run_decides_at_start_is_not_stored_as_an_option() -> None:
    """Concurrency, kind, resume and budget belong to one invocation, not to the run."""
    options = RunOptions(concurrency=3, kind=RunKind.RERUN, resume="abc", budget=2.5)
    assert RunOptions.from_stored(options.stored_args()) == RunOptions()


def test_arguments_of_an_older_redline_read_with_defaults() -> None:
    older = {"suites": ["s"], "cases": [], "samples": None, "tier": None, "model": None}
    options = RunOptions.from_stored(older | {"shard": None, "judge": False})
    assert options == RunOptions(suites=("s",))
    assert RunOptions.from_stored({}) == RunOptions()
