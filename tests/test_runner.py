"""The runner end to end against the real loopback server: verdicts, retries, evidence."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from casefiles import slop_rubric
from redline.config import Config, parse_config
from redline.errors import UsageError
from redline.providers.base import Provider
from redline.running.pipeline import SampleJob, SamplePipeline
from redline.running.replay import ReplayProvider
from redline.running.runner import RunOptions, RunProgress, execute_run, run_suites, sample_seed
from redline.running.store import RunStore
from redline.suite.cases import load_suites
from redline.vocabulary.completion import ChatRequest
from redline.vocabulary.records import CaseOutcome, RunKind, RunResult, RunStatus
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer

JSON_ASSERTS = "  - type: is-json\n  - type: contains\n    value: '\"ok\"'\n"
KEY_ENV = "REDLINE_LOOPBACK_KEY"
SECRET = "sk-loopback-7f3a9c-never-store-me"


def write_suite(
    root: Path,
    name: str,
    cases: Mapping[str, str | tuple[str, str]],
    *,
    samples: int = 2,
    tier: str = "contract",
    model: str = "fake",
) -> Path:
    """A suite folder: each case is `vars.q` (the server's control tokens) and its asserts."""
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "system.txt").write_text("Answer with the invoice as JSON.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        f"name: {name}\nprompt:\n  system: system.txt\n  user: '{{{{q}}}}'\n"
        f"model: {model}\nsamples: {samples}\ntier: {tier}\n",
        encoding="utf-8",
    )
    for case_id, spec in cases.items():
        q, asserts = (spec, JSON_ASSERTS) if isinstance(spec, str) else spec
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\nprovenance: {{ticket: T-{case_id}, reported: 2026-01-02, "
            f"note: test}}\nvars:\n  q: '{q}'\nassert:\n{asserts}",
            encoding="utf-8",
        )
    return folder


def write_config(root: Path, server: LoopbackLLMServer, **kw: object) -> Config:
    settings: dict[str, object] = {"timeout_s": 1.0, "max_retries": 2, "concurrency": 8}
    settings.update(kw)
    (root / "redline.toml").write_text(
        server.redline_toml(key_env=KEY_ENV, **settings),  # type: ignore[arg-type]
        encoding="utf-8",
    )
    return parse_config(root / "redline.toml")


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, SECRET)
    return SECRET


def run(
    config: Config, paths: Sequence[Path], options: RunOptions | None = None
) -> tuple[RunStore, str]:
    store = RunStore.open(config.store_path)
    record = run_suites(load_suites(paths, config), config, store, options or RunOptions())
    return store, record.id


MODES: dict[str, tuple[str, Verdict, int]] = {
    # case id: (control tokens, verdict of every sample, requests per sample)
    "json": ("MODE:json", Verdict.OK, 1),
    "preamble": ("MODE:preamble", Verdict.MALFORMED, 1),
    "length": ("MODE:length", Verdict.TRUNCATED, 1),
    "refusal": ("MODE:refusal", Verdict.REFUSED, 1),
    "refusal-stop": ("MODE:refusal-stop", Verdict.REFUSED, 1),
    "reset": ("MODE:reset", Verdict.TRANSPORT, 3),
    "http500": ("MODE:500", Verdict.TRANSPORT, 3),
    "rate-limited": ("MODE:429 FAILS:2 RETRY_AFTER:0", Verdict.OK, 3),
    "too-slow": ("MODE:slow DELAY_MS:3000", Verdict.TRANSPORT, 3),
    "slow-once": ("MODE:slow FAILS:1 DELAY_MS:3000", Verdict.OK, 2),
    "invalid-body": ("MODE:invalid", Verdict.TRANSPORT, 3),
}


def test_every_server_mode_gets_its_verdict_and_retries(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server, timeout_s=0.5, concurrency=16)
    cases: dict[str, str | tuple[str, str]] = {k: v[0] for k, v in MODES.items()}
    cases["loop"] = (
        "MODE:loop",
        "  - type: compression-ratio\n    value: 0.35\n  - type: distinct-n\n    value: 0.7\n",
    )
    suite = write_suite(tmp_path, "modes", cases)
    flaky = write_suite(tmp_path, "flaky", {"flaky": "MODE:flaky"}, samples=5, tier="quality")
    store, run_id = run(config, [suite, flaky])
    samples = {(s.case_id, s.index): s for s in store.samples(run_id)}
    for case_id, (tokens, verdict, per_sample) in MODES.items():
        for index in range(2):
            sample = samples[(case_id, index)]
            assert sample.verdict is verdict, (case_id, sample.error, sample.output)
            assert sample.attempts == per_sample, case_id
            assert sample.seed == sample_seed(run_id, "modes", case_id, index)
        mode = tokens.split()[0].removeprefix("MODE:")
        seen = [r for r in llm_server.requests if r.body["messages"][-1]["content"] == tokens]
        assert len(seen) == 2 * per_sample, (case_id, mode)
        assert len({r.body["seed"] for r in seen}) == 2
    assert {samples[("loop", i)].verdict for i in range(2)} == {Verdict.WRONG}
    loop_results = samples[("loop", 0)].assertions
    assert [a.type for a in loop_results] == ["compression-ratio", "distinct-n"]
    assert all(a.failed and a.score is not None for a in loop_results)
    assert "timeout" in (samples[("too-slow", 0)].error or "")
    flaky_verdicts = sorted(str(s.verdict) for s in store.samples(run_id, "flaky"))
    assert flaky_verdicts == ["malformed", "ok", "ok", "ok", "ok"]

    cases_by_id = {c.case_id: c for c in store.cases(run_id)}
    assert cases_by_id["json"].result is CaseOutcome.PASS
    assert cases_by_id["preamble"].result is CaseOutcome.FAIL
    assert cases_by_id["reset"].result is CaseOutcome.INCONCLUSIVE
    assert cases_by_id["flaky"].result is CaseOutcome.PASS
    assert cases_by_id["flaky"].verdicts[Verdict.MALFORMED] == 1
    record = store.run(run_id)
    # 10 of 29 samples are transport or truncated: over the 20% that the rule Content diffs
    # need enough evidence allows.
    assert record.result is RunResult.INCONCLUSIVE
    assert record.status is RunStatus.FINISHED
    assert record.manifest["@model"] == "loopback:fake-model-2025-01-01"
    assert samples[("json", 0)].cost is not None
    store.close()


def test_api_key_never_reaches_store_or_export(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    from redline.running.exchange import export_run

    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {"ok": "MODE:json", "boom": "MODE:500", "echo": "MODE:echo"})
    store, run_id = run(config, [suite], RunOptions(args={"note": "cli args are kept"}))
    export_run(store, run_id, tmp_path / "export")
    store.close()
    assert all(r.headers["authorization"] == f"Bearer {key}" for r in llm_server.requests)
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".toml"]
    assert any(p.name == "redline.db" for p in files)
    assert any(p.name == "samples.jsonl" for p in files)
    for path in files:
        assert key.encode() not in path.read_bytes(), path


def test_interrupt_stores_finished_samples_and_resume_runs_only_the_missing(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server, concurrency=2)
    suite = write_suite(tmp_path, "s", {f"c{i}": f"MODE:json n{i}" for i in range(4)}, samples=3)
    suites = load_suites([suite], config)
    llm_server.latency_ms = 100
    store = RunStore.open(config.store_path)
    seen: list[RunProgress] = []

    async def interrupted() -> None:
        task = asyncio.ensure_future(
            execute_run(suites, config, store, RunOptions(run_id="cafe01"), seen.append)
        )
        while not seen or seen[-1].done < 4:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(interrupted())
    record = store.run("cafe01")
    assert record.status is RunStatus.INTERRUPTED and record.result is None
    stored = store.sample_keys("cafe01")
    assert 4 <= len(stored) < 12
    assert sum(c.samples for c in store.cases("cafe01")) == len(stored)

    llm_server.reset()
    resumed = run_suites(suites, config, store, RunOptions(resume="caf"))
    assert resumed.id == "cafe01" and resumed.status is RunStatus.FINISHED
    assert resumed.result is RunResult.GREEN
    # A request the interrupted run had in flight can still reach the server after the
    # reset; it asks for a sample that is missing anyway (same seed), so count samples asked.
    asked = {(r.body["messages"][-1]["content"], r.body["seed"]) for r in llm_server.requests}
    assert len(asked) == 12 - len(stored)
    assert len(store.samples("cafe01")) == 12
    assert [c.passes for c in store.cases("cafe01")] == [3, 3, 3, 3]
    with pytest.raises(UsageError, match="finished already"):
        run_suites(suites, config, store, RunOptions(resume="cafe01"))
    store.close()


def test_a_sample_is_reported_done_only_once_another_reader_sees_it_stored(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    """Samples finishing together share a commit; none is counted before it is durable."""
    config = write_config(tmp_path, llm_server, concurrency=8)
    suite = write_suite(tmp_path, "s", {f"c{i}": f"MODE:json n{i}" for i in range(6)}, samples=4)
    store = RunStore.open(config.store_path)
    reader = RunStore.open(config.store_path)  # a second connection: what the TUI would read
    reported: list[tuple[str, str, int]] = []
    missing: list[tuple[str, str, int]] = []

    def progress(p: RunProgress) -> None:
        if p.last is not None:
            key = (p.last.suite, p.last.case_id, p.last.index)
            reported.append(key)
            if key not in reader.sample_keys(p.run_id):
                missing.append(key)

    record = run_suites(
        load_suites([suite], config), config, store, RunOptions(), progress=progress
    )
    assert missing == []
    assert sorted(reported) == sorted(reader.sample_keys(record.id))
    assert len(reported) == 24
    store.close()
    reader.close()


def test_replay_rescores_stored_outputs_without_calling_the_model(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server)
    suite = write_suite(
        tmp_path, "s", {"a": "MODE:json", "b": "MODE:preamble"}, samples=3, tier="quality"
    )
    store, first = run(config, [suite])
    assert store.run(first).result is RunResult.RED
    original = store.samples(first)

    # The assertion change under test: accept a preamble, demand a supplier.
    (suite / "b.yaml").write_text(
        "id: b\nprovenance: {ticket: T-b, reported: 2026-01-02, note: test}\n"
        "vars:\n  q: 'MODE:preamble'\nassert:\n  - type: contains\n    value: Sinar Jaya\n",
        encoding="utf-8",
    )
    llm_server.reset()
    replay = run_suites(load_suites([suite], config), config, store, RunOptions(replay=first))
    assert llm_server.count() == 0
    assert replay.kind is RunKind.REPLAY and replay.parent_id == first
    assert replay.id != first and replay.model_id == store.run(first).model_id
    assert replay.result is RunResult.GREEN
    rescored = store.samples(replay.id)
    assert [s.output for s in rescored] == [s.output for s in original]
    assert {s.verdict for s in rescored if s.case_id == "b"} == {Verdict.OK}
    assert store.run(first).result is RunResult.RED
    assert {s.verdict for s in store.samples(first, "b")} == {Verdict.MALFORMED}
    assert {c.case_id: c.case_hash for c in store.cases(first)}["b"] != {
        c.case_id: c.case_hash for c in store.cases(replay.id)
    }["b"]
    store.close()


def test_replay_is_a_provider_answering_the_sample_a_request_draws(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {"a": "MODE:flaky"}, samples=4, tier="quality")
    store, first = run(config, [suite])
    replay = ReplayProvider(store, first)
    assert isinstance(replay, Provider) and replay.identity() == store.run(first).model_id
    [loaded] = load_suites([suite], config)
    stored = store.samples(first, "a")[2]
    pipeline = SamplePipeline(replay, run_id="again", model_name="")
    job = SampleJob(loaded, loaded.case("a"), 2, stored.seed)
    again = asyncio.run(pipeline.draw(job))
    assert (again.output, again.verdict, again.seed, again.run_id) == (
        stored.output,
        stored.verdict,
        stored.seed,
        "again",
    )
    request = ChatRequest(model="", system="", user="", sample=("s", "a", 9))
    missing = asyncio.run(replay.complete(request))
    assert missing.error is not None and "holds no sample" in missing.error
    store.close()


def test_rerun_is_a_new_run_linked_to_its_parent_with_more_samples(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {"a": "MODE:json", "b": "MODE:flaky"}, samples=5)
    store, first = run(config, [suite])
    rerun = run_suites(
        load_suites([suite], config),
        config,
        store,
        RunOptions(kind=RunKind.RERUN, parent_id=first, case_ids=("b",), samples=10),
    )
    assert rerun.kind is RunKind.RERUN and rerun.parent_id == first and rerun.id != first
    [case] = store.cases(rerun.id)
    assert (case.case_id, case.samples, case.required, case.passes) == ("b", 10, 10, 8)
    assert len(store.samples(first, "b")) == 5
    history = store.case_history("b", "s")
    assert [(r.kind, c.samples) for r, c in history] == [(RunKind.RUN, 5), (RunKind.RERUN, 10)]
    store.close()


def test_concurrency_is_bounded_and_capped_by_the_provider(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    from redline.providers.factory import make_provider

    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {f"c{i}": f"MODE:json n{i}" for i in range(6)}, samples=2)
    provider = make_provider(config.model("fake"), config, os.environ)
    provider.max_parallel = 2
    llm_server.latency_ms = 60
    store = RunStore.open(config.store_path)
    suites = load_suites([suite], config)

    async def bounded() -> None:
        await execute_run(suites, config, store, RunOptions(concurrency=8), None, provider)
        await provider.aclose()

    asyncio.run(bounded())
    arrivals = sorted(r.at for r in llm_server.requests)
    # At most 2 in flight: any 3 consecutive arrivals span at least one full latency.
    assert all(arrivals[i + 2] - arrivals[i] >= 0.05 for i in range(len(arrivals) - 2))
    store.close()


def test_unknown_case_filter_is_a_usage_error_before_any_call(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {"a": "MODE:json"})
    with pytest.raises(UsageError, match="nope"):
        run(config, [suite], RunOptions(case_ids=("nope",)))
    assert llm_server.count() == 0


JUDGE_RUBRIC = slop_rubric(prompt="MODE:json {{output}}", checks=False)


def test_a_settled_cut_off_sample_keeps_its_content_verdict_when_judges_run(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    # The cut-off output already spends its word budget: `wrong` whatever followed, and
    # running the judges (`--judge`) must not turn it back into `truncated`.
    config = write_config(tmp_path, llm_server)
    asserts = (
        "  - type: is-json\n  - type: max-words\n    value: 3\n"
        "  - type: judge\n    rubric: rubrics/slop.yaml\n"
    )
    suite = write_suite(tmp_path, "cut", {"spent": ("MODE:length", asserts)})
    (suite / "rubrics").mkdir()
    (suite / "rubrics" / "slop.yaml").write_text(JUDGE_RUBRIC, encoding="utf-8")
    for judge in (False, True):
        llm_server.reset()
        store, run_id = run(config, [suite], RunOptions(judge=judge))
        assert {s.verdict for s in store.samples(run_id)} == {Verdict.WRONG}, judge
        assert llm_server.count() == 2
        store.close()


def test_each_run_draws_its_own_seeds_and_a_resume_keeps_them() -> None:
    first = {sample_seed("run-a", "s", "c", i) for i in range(5)}
    assert len(first) == 5
    assert first == {sample_seed("run-a", "s", "c", i) for i in range(5)}
    assert first.isdisjoint(sample_seed("run-b", "s", "c", i) for i in range(5))


def test_a_run_leaves_the_cycle_collector_as_it_found_it(
    tmp_path: Path, llm_server: LoopbackLLMServer, key: str
) -> None:
    """A run collects cycles less often while it draws (its objects are freed by reference
    count); a program that runs suites, or fails one, finds its own settings afterwards."""
    import gc

    config = write_config(tmp_path, llm_server)
    suite = write_suite(tmp_path, "s", {"a": "MODE:json"}, samples=2)
    before = gc.get_threshold(), gc.get_freeze_count()
    store, _ = run(config, [suite])
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    with pytest.raises(UsageError):
        run_suites(load_suites([suite], config), config, store, RunOptions(resume="nope00"))
    assert (gc.get_threshold(), gc.get_freeze_count()) == before
    store.close()
