"""Sequential sampling as documented: a batch may be drawn in parallel, but the test reads
the samples in index order and stops at its first crossing; what is drawn after that is
kept and said, never counted; the stored result states the rule it was decided by."""

from __future__ import annotations

import asyncio
import random
from collections import Counter
from pathlib import Path

import pytest

from redline.cli import main
from redline.config import parse_config
from redline.running.options import RunOptions
from redline.running.pipeline import SampleJob
from redline.running.planning import plan_run
from redline.running.run_record import case_result
from redline.running.runner import RunProgress, execute_run, run_suites
from redline.running.schedule import Schedule
from redline.running.seeds import sample_seed
from redline.running.store import RunStore
from redline.suite.cases import Case, Suite, load_suite
from redline.vocabulary.records import CaseOutcome, RunStatus
from redline.vocabulary.sequential import SequentialDraw, SequentialPlan
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer, rate_answers_json

KEY_ENV = "REDLINE_LOOPBACK_KEY"
#: The order from the report: past the fail bound at sample 6, inside the band at 10.
FFPPPF_PPPP = "FFPPPFPPPP"


def _write_suite(root: Path, case_ids: list[str], rate: int = 70, frozen: bool = False) -> Path:
    folder = root / "s"
    folder.mkdir(parents=True)
    (folder / "system.txt").write_text("Answer with JSON.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: s\nprompt:\n  system: system.txt\n  user: '{{q}}'\nmodel: fake\n"
        "tier: quality\nsamples: {min: 3, max: 10}\n" + ("seed: frozen\n" if frozen else ""),
        encoding="utf-8",
    )
    for case_id in case_ids:
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\nprovenance: {{ticket: T-1, reported: 2026-01-02, note: t}}\n"
            f"vars:\n  q: 'RATE:{rate} {case_id}'\nassert:\n  - type: is-json\n",
            encoding="utf-8",
        )
    return folder


def _drive(
    suite: Suite, case: Case, script: str, order: random.Random | None
) -> tuple[list[int], SequentialDraw]:
    """The runner's plan and schedule for one case, every handed-out sample in flight at
    once and finishing in `order` (None: last handed out finishes first)."""
    plan = plan_run([(suite, case)], RunOptions(), "r1")
    schedule = Schedule(plan)
    in_flight: list[SampleJob] = []
    drawn: list[int] = []
    while True:
        while (job := schedule.take()) is not None:
            in_flight.append(job)
        if not in_flight:
            break
        job = in_flight.pop(order.randrange(len(in_flight)) if order else -1)
        drawn.append(job.index)
        schedule.done(job, Verdict.OK if script[job.index] == "P" else Verdict.WRONG)
    return sorted(drawn), plan.sequential[(case.suite, case.id)].draw


def test_the_decision_is_taken_at_the_first_crossing_in_sample_order(tmp_path: Path) -> None:
    suite = load_suite(_write_suite(tmp_path, ["c"]))
    case = suite.cases[0]
    outcomes = []
    for order in (None, random.Random(1), random.Random(2), random.Random(3)):
        drawn, draw = _drive(suite, case, FFPPPF_PPPP, order)
        verdicts = Counter(Verdict.OK if FFPPPF_PPPP[i] == "P" else Verdict.WRONG for i in drawn)
        result = case_result(case, 10, verdicts, draw)
        outcomes.append((drawn, result))
    first_drawn, result = outcomes[0]
    # The batch after the first 3 is drawn whole (indices 3..9), but the test stopped at 6.
    assert first_drawn == list(range(10))
    assert result.outcome is CaseOutcome.FAIL
    assert (result.samples, result.passes, result.uncounted) == (6, 3, 4)
    assert result.passes < result.required == 6
    assert (result.bar, result.margin) == (0.8, 0.15)
    # Whatever order the batch finishes in, the same samples are drawn and decide the same.
    assert all(o == outcomes[0] for o in outcomes)
    # Decided on the totals of the batch, the same samples would have read "marginal".
    assert SequentialPlan().decide(7, 3) is CaseOutcome.MARGINAL


@pytest.mark.parametrize(
    "plan",
    [SequentialPlan(), SequentialPlan(max=20, false_pass=0.10), SequentialPlan(contract=True)],
    ids=["default", "more-power", "contract"],
)
def test_required_is_the_count_that_passes_at_the_sample_count(plan: SequentialPlan) -> None:
    for n in range(1, plan.max + 1):
        required = plan.passes_to_pass(n)
        for passes in range(n + 1):
            assert (plan.decide(passes, n - passes) is CaseOutcome.PASS) == (passes >= required)


def _crossing_case(rate: float) -> tuple[str, int]:
    """A case id whose frozen-seed answers at `rate` cross the fail bound inside a batch,
    and the sample count at which they do."""
    plan = SequentialPlan()
    for n in range(10_000):
        case_id = f"c{n}"
        draw = SequentialDraw(plan, drawn=plan.min)
        verdicts = [
            rate_answers_json(sample_seed("", "s", case_id, i, frozen=0), rate) for i in range(10)
        ]
        while indices := (range(draw.drawn) if draw.counted == 0 else draw.more()):
            for i in indices:
                draw.add(i, Verdict.OK if verdicts[i] else Verdict.MALFORMED)
            if draw.decision() is not None:
                break
        if draw.decision() is CaseOutcome.FAIL and draw.uncounted:
            return case_id, draw.counted
    raise AssertionError("no such case id")


@pytest.mark.parametrize("concurrency", [1, 8])
def test_a_run_stores_the_decision_at_the_crossing_and_keeps_the_later_samples(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    case_id, crossing = _crossing_case(70)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackLLMServer() as server:
        (tmp_path / "redline.toml").write_text(
            server.redline_toml(key_env=KEY_ENV, concurrency=concurrency), encoding="utf-8"
        )
        config = parse_config(tmp_path / "redline.toml")
        suite = load_suite(_write_suite(tmp_path, [case_id], frozen=True), config)
        with RunStore.open(tmp_path / "store.db") as store:
            record = run_suites([suite], config, store, RunOptions())
            case = store.cases(record.id)[0]
            stored = store.samples(record.id)
    assert case.result is CaseOutcome.FAIL
    assert case.samples == crossing and case.uncounted > 0
    assert len(stored) == case.samples + case.uncounted
    assert case.passes == sum(s.verdict is Verdict.OK for s in stored if s.index < crossing)
    assert case.passes < case.required
    assert (case.bar, case.margin) == (0.8, 0.15)


def test_adaptive_progress_says_up_to_and_never_passes_its_total(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv(KEY_ENV, "sk-test")
    monkeypatch.chdir(tmp_path)
    with LoopbackLLMServer() as server:
        (tmp_path / "redline.toml").write_text(
            server.redline_toml(key_env=KEY_ENV), encoding="utf-8"
        )
        config = parse_config(tmp_path / "redline.toml")
        folder = _write_suite(tmp_path, [f"c{i}" for i in range(6)], rate=100)
        seen: list[RunProgress] = []
        with RunStore.open(tmp_path / "store.db") as store:
            run_suites([load_suite(folder, config)], config, store, RunOptions(), seen.append)
        assert main(["run", str(folder)]) in (0, 1)
    out = capsys.readouterr().out
    assert seen[0].up_to and seen[0].total == 6 * 10
    assert all(p.done <= p.total for p in seen)
    assert seen[-1].done == seen[-1].total < 6 * 10
    assert "up to 60 sample(s) to run" in out
    assert " of up to " in out or f"{seen[-1].total}/" in out


def test_validate_says_a_sequential_count_is_a_maximum(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "redline.toml").write_text('[models]\nfake = "openai:gpt-4.1-mini-2025-04-14"\n')
    monkeypatch.chdir(tmp_path)
    folder = _write_suite(tmp_path, ["a", "b"])
    assert main(["validate", str(folder)]) == 0
    out = capsys.readouterr().out
    assert "up to 10 samples (sequential)" in out
    assert "up to 20 samples per run" in out


def test_an_interrupted_sequential_run_resumes_to_the_same_decision(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    case_id, _ = _crossing_case(70)
    monkeypatch.setenv(KEY_ENV, "sk-test")
    with LoopbackLLMServer() as server:
        (tmp_path / "redline.toml").write_text(
            server.redline_toml(key_env=KEY_ENV, concurrency=2), encoding="utf-8"
        )
        config = parse_config(tmp_path / "redline.toml")
        suite = load_suite(_write_suite(tmp_path, [case_id, "other"], frozen=True), config)
        with RunStore.open(tmp_path / "store.db") as store:
            whole = run_suites([suite], config, store, RunOptions())
            expected = {c.case_id: c for c in store.cases(whole.id)}
            server.latency_ms = 50
            seen: list[RunProgress] = []

            async def interrupted() -> None:
                options = RunOptions(run_id="cut01")
                task = asyncio.ensure_future(
                    execute_run([suite], config, store, options, seen.append)
                )
                while not seen or seen[-1].done < 5:
                    await asyncio.sleep(0.01)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task

            asyncio.run(interrupted())
            assert store.run("cut01").status is RunStatus.INTERRUPTED
            resumed = run_suites([suite], config, store, RunOptions(resume="cut01"))
            got = {c.case_id: c for c in store.cases(resumed.id)}
            stored = len(store.samples(resumed.id))
    fields = ("samples", "passes", "required", "result", "uncounted")
    for case in (case_id, "other"):
        assert [getattr(got[case], f) for f in fields] == [
            getattr(expected[case], f) for f in fields
        ]
    assert stored == sum(c.samples + c.uncounted for c in got.values())


def test_a_resume_with_samples_set_aside_draws_each_missing_one_once(tmp_path: Path) -> None:
    """`--retry-transport` sets aside samples anywhere in a case's batches: the resumed
    plan draws exactly those again, and ends where the whole run did."""
    suite = load_suite(_write_suite(tmp_path, ["c"]))
    case = suite.cases[0]
    script = "PFPPFPPPPP"
    whole, draw = _drive(suite, case, script, None)
    verdict = {i: Verdict.OK if script[i] == "P" else Verdict.WRONG for i in whole}
    expected = (draw.decision(), draw.counted, draw.uncounted)
    aside = {1, whole[-2]}
    have = {i: v for i, v in verdict.items() if i not in aside}
    plan = plan_run([(suite, case)], RunOptions(), "r1", {(case.suite, case.id): have})
    assert sorted(job.index for job in plan.todo) == sorted(aside)
    schedule = Schedule(plan)
    redrawn = []
    while (job := schedule.take()) is not None:
        redrawn.append(job.index)
        schedule.done(job, verdict[job.index])
    resumed = plan.sequential[(case.suite, case.id)].draw
    assert sorted(redrawn) == sorted(aside)
    assert (resumed.decision(), resumed.counted, resumed.uncounted) == expected
