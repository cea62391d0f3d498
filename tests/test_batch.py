"""Batch mode as a user runs it: `redline run --batch` processes against a loopback server of
both batch APIs — answers and failures per sample, the batch price, --no-wait and --resume
across process ends, expiry and cancellation, sequential rounds, progress lines."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from batch_servers import BatchServer, Plan
from redline.running.store import RunStore
from redline.vocabulary.verdicts import Verdict
from test_runner import KEY_ENV, SECRET, write_suite

SRC = Path(__file__).resolve().parents[1] / "src"
MODELS = ("fake", "fake-anthropic")
CREDIT = "Your credit balance is too low to access the Anthropic API."
QUOTA = "You exceeded your current quota."


@pytest.fixture
def server() -> Iterator[BatchServer]:
    with BatchServer() as running:
        yield running


@pytest.fixture
def project(tmp_path: Path, server: BatchServer) -> Path:
    (tmp_path / "redline.toml").write_text(server.redline_toml(), encoding="utf-8")
    return tmp_path


def redline(project: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(SRC), KEY_ENV: SECRET}
    return subprocess.run(
        [sys.executable, "-m", "redline", *args],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def store(project: Path) -> RunStore:
    return RunStore.open(project / ".redline" / "redline.db")


def only_run(project: Path) -> str:
    with store(project) as s:
        runs = s.runs()
    assert len(runs) == 1
    return runs[0].id


@pytest.mark.parametrize("model", MODELS)
def test_a_batch_run_answers_every_sample_with_its_own_verdict_and_error_class(
    project: Path, server: BatchServer, model: str
) -> None:
    write_suite(
        project,
        "s",
        {"ok": "MODE:json", "bad": "MODE:preamble", "limit": "MODE:429", "wrong": "MODE:400"},
        samples=3,
    )
    done = redline(project, "run", "s", "--batch", "--quiet", "--model", model)
    assert done.returncode == 3, done.stderr  # half the samples failed in transport
    assert len(server.batches) == 1 and len(server.batches[0].lines) == 12
    assert set(server.submitted.values()) == {1}
    assert server.batches[0].api == ("openai" if model == "fake" else "anthropic")
    with store(project) as s:
        samples = {(x.case_id, x.index): x for x in s.samples(only_run(project))}
    assert {x.verdict for (case, _), x in samples.items() if case == "ok"} == {Verdict.OK}
    assert {x.verdict for (case, _), x in samples.items() if case == "bad"} == {Verdict.MALFORMED}
    limited = samples[("limit", 0)]
    assert limited.verdict is Verdict.TRANSPORT and limited.error is not None
    assert "rate limited" in limited.error and "rate limited on purpose" in limited.error
    wrong = samples[("wrong", 0)]
    assert wrong.error is not None and "invalid request" in wrong.error
    assert "max_tokens" in wrong.error
    # Progress: submitted, its state while pending, and the counts when it ended.
    assert "submitted batch " in done.stdout
    ended = "completed 12/12 (completed 6, failed 6)" if model == "fake" else "ended 12/12"
    assert ended in done.stdout


@pytest.mark.parametrize(
    ("model", "input_price", "output_price"), [("fake", 1, 2), ("fake-anthropic", 3, 15)]
)
def test_every_sample_costs_the_batch_price_half_the_regular_one(
    project: Path, server: BatchServer, model: str, input_price: float, output_price: float
) -> None:
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json x"}, samples=2)
    assert redline(project, "run", "s", "--batch", "--quiet", "--model", model).returncode == 0
    with store(project) as s:
        samples = s.samples(only_run(project))
    for sample in samples:
        assert sample.input_tokens and sample.output_tokens and sample.cost is not None
        regular = (sample.input_tokens * input_price + sample.output_tokens * output_price) / 1e6
        assert sample.cost == pytest.approx(regular / 2)


def test_batch_discount_in_the_price_table_sets_the_batch_price(
    project: Path, server: BatchServer
) -> None:
    text = server.redline_toml().replace(
        "output_per_mtok = 2.0\n", "output_per_mtok = 2.0\nbatch_discount = 0.25\n", 1
    )
    (project / "redline.toml").write_text(text, encoding="utf-8")
    write_suite(project, "s", {"a": "MODE:json"}, samples=1)
    assert redline(project, "run", "s", "--batch", "--quiet").returncode == 0
    with store(project) as s:
        (sample,) = s.samples(only_run(project))
    assert sample.input_tokens and sample.output_tokens
    regular = (sample.input_tokens * 1 + sample.output_tokens * 2) / 1e6
    assert sample.cost == pytest.approx(regular * 0.75)


@pytest.mark.parametrize("model", MODELS)
def test_no_wait_ends_pending_with_exit_3_and_resume_collects_without_sending_again(
    project: Path, server: BatchServer, model: str
) -> None:
    server.default = Plan("hold")
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json y"}, samples=3)
    out = project / "out"
    first = redline(
        project, "run", "s", "--batch", "--no-wait", "--quiet", "--model", model, "--out", str(out)
    )
    run_id = only_run(project)
    assert first.returncode == 3, first.stderr
    (batch,) = server.batches
    assert f"batch {batch.id} is in progress (0/6)" in first.stderr
    assert f"collect it with `redline run --resume {run_id}`" in first.stderr
    pending = json.loads((out / "pending.json").read_text(encoding="utf-8"))
    assert pending["run_id"] == run_id and pending["batches"][0]["id"] == batch.id
    assert not (out / "results.json").exists()

    still = redline(project, "run", "--resume", run_id, "--no-wait", "--quiet")
    assert still.returncode == 3 and f"batch {batch.id} is in progress" in still.stderr
    server.release()
    done = redline(project, "run", "--resume", run_id, "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(server.batches) == 1  # collected, never submitted again
    assert set(server.submitted.values()) == {1}
    with store(project) as s:
        assert len(s.samples(run_id)) == 6
        assert s.batches(run_id)[0].ended


def test_a_killed_process_leaves_its_batch_to_resume(project: Path, server: BatchServer) -> None:
    server.default = Plan("hold")
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json z"}, samples=2)
    env = {**os.environ, "PYTHONPATH": str(SRC), KEY_ENV: SECRET}
    proc = subprocess.Popen(
        [sys.executable, "-m", "redline", "run", "s", "--batch", "--quiet"],
        cwd=project,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(b.looks >= 2 for b in server.batches):
            time.sleep(0.05)
        assert server.batches, "the run never submitted its batch"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=10)
    run_id = only_run(project)
    with store(project) as s:
        assert s.batches(run_id)[0].batch_id == server.batches[0].id
    server.release()
    done = redline(project, "run", "--resume", run_id, "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(server.batches) == 1 and set(server.submitted.values()) == {1}


@pytest.mark.parametrize(("outcome", "word"), [("expire", "expired"), ("cancel", "cancelled")])
@pytest.mark.parametrize("model", MODELS)
def test_an_expired_or_cancelled_batch_keeps_what_it_answered_and_resume_sends_the_rest(
    project: Path, server: BatchServer, model: str, outcome: str, word: str
) -> None:
    server.plans = [Plan(outcome, answered=2)]
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json w"}, samples=3)
    first = redline(project, "run", "s", "--batch", "--quiet", "--model", model)
    assert first.returncode == 3
    run_id = only_run(project)
    first_batch = server.batches[0]
    assert f"batch {first_batch.id} left 4 of its 6 requests unanswered" in first.stderr
    assert f"(4 {word})" in first.stderr
    assert f"redline run --resume {run_id}" in first.stderr
    with store(project) as s:
        assert len(s.samples(run_id)) == 2
    done = redline(project, "run", "--resume", run_id, "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(server.batches) == 2
    assert set(server.batches[1].custom_ids) == first_batch.never_ran
    with store(project) as s:
        assert len(s.samples(run_id)) == 6


def test_a_failed_batch_says_why(project: Path, server: BatchServer) -> None:
    server.plans = [Plan("fail")]
    write_suite(project, "s", {"a": "MODE:json"}, samples=2)
    done = redline(project, "run", "s", "--batch", "--quiet")
    assert done.returncode == 3
    assert "the batch failed: invalid_json_line: bad line (line 1)" in done.stderr


@pytest.mark.parametrize(
    ("model", "status", "body", "words"),
    [
        (
            "fake",
            429,
            {"error": {"message": QUOTA, "code": "insufficient_quota"}},
            f"refuses the account: {QUOTA}",
        ),
        (
            "fake-anthropic",
            400,
            {"type": "error", "error": {"type": "invalid_request_error", "message": CREDIT}},
            f"refuses the account: {CREDIT}",
        ),
        (
            "fake",
            404,
            {"error": {"message": "The model does not exist.", "code": "model_not_found"}},
            "serves no model 'fake-model-2025-01-01': The model does not exist.",
        ),
    ],
    ids=["openai quota", "anthropic credit", "openai model"],
)
def test_a_batch_the_provider_refuses_the_account_or_model_of_stops_as_a_plain_run_does(
    project: Path, server: BatchServer, model: str, status: int, body: object, words: str
) -> None:
    server.refuse = (status, body)
    write_suite(project, "s", {"a": "MODE:json"}, samples=2, model=model)
    done = redline(project, "run", "s", "--batch", "--quiet")
    assert done.returncode == 2, done.stderr
    assert words in done.stderr and "redline run --resume" in done.stderr
    fix = "Add credit" if "refuses the account" in words else "Check the model's id"
    assert fix in done.stderr


def test_sequential_sampling_plays_as_rounds_with_the_decisions_of_a_plain_run(
    project: Path, server: BatchServer
) -> None:
    # 60% pass rate by seed: some cases decide at once, some need more rounds.
    cases = {f"c{i}": f"MODE:json RATE:60 n{i}" for i in range(6)}
    write_suite(project, "s", cases, samples=5, tier="quality")
    suite = project / "s" / "suite.yaml"
    suite.write_text(suite.read_text(encoding="utf-8") + "seed: 7\n", encoding="utf-8")
    batched = redline(project, "run", "s", "--batch", "--adaptive", "--quiet")
    assert len(server.batches) >= 2  # the first round, then what undecided cases need
    first_round = len(server.batches[0].lines)
    assert first_round == 6 * 3  # every case's first three samples
    assert set(server.submitted.values()) == {1}
    with store(project) as s:
        runs = s.runs()
        batch_cases = {(c.case_id, c.passes, c.samples) for c in s.cases(runs[0].id)}
        assert len(s.samples(runs[0].id)) == sum(server.submitted.values())
    # Seeds are frozen: the same answers, so a plain run over the same server answers
    # decides the same (run against the batch server's own answers through the sync path).
    from servers import LoopbackLLMServer

    with LoopbackLLMServer() as plain_server:
        (project / "redline.toml").write_text(plain_server.redline_toml(), encoding="utf-8")
        plain = redline(project, "run", "s", "--adaptive", "--quiet")
    with store(project) as s:
        latest = s.runs()[0]
        assert latest.id != runs[0].id
        plain_cases = {(c.case_id, c.passes, c.samples) for c in s.cases(latest.id)}
    assert batched.returncode == plain.returncode
    assert batch_cases == plain_cases


def test_batch_on_a_provider_without_a_batch_api_is_a_usage_error(project: Path) -> None:
    text = (project / "redline.toml").read_text(encoding="utf-8")
    text = text.replace("[models]\n", '[models]\nsmall = "local:smollm2-135m-instruct-q4_1"\n', 1)
    (project / "redline.toml").write_text(text, encoding="utf-8")
    write_suite(project, "s", {"a": "MODE:json"}, samples=1, model="small")
    done = redline(project, "run", "s", "--batch")
    assert done.returncode == 2
    assert "no batch API" in done.stderr and "type = 'openai'" in done.stderr
    assert not (project / ".redline" / "redline.db").exists() or not only_run_ids(project)


def only_run_ids(project: Path) -> list[str]:
    with store(project) as s:
        return [r.id for r in s.runs()]


def test_the_batch_setting_sends_runs_through_the_batch_api_and_no_batch_overrides_it(
    tmp_path: Path, server: BatchServer
) -> None:
    (tmp_path / "redline.toml").write_text(server.redline_toml(batch=True), encoding="utf-8")
    write_suite(tmp_path, "s", {"a": "MODE:json"}, samples=2)
    assert redline(tmp_path, "run", "s", "--quiet").returncode == 0
    assert len(server.batches) == 1
    plain = redline(tmp_path, "run", "s", "--quiet", "--no-batch")
    assert plain.returncode == 2  # the batch server has no synchronous endpoint
    assert len(server.batches) == 1


def test_the_nightly_workflow_submits_in_one_step_and_collects_in_the_next(
    project: Path, server: BatchServer
) -> None:
    """The quality job's steps as the generated workflow writes them, run with bash: the run
    step submits and ends pending; the collect step resumes the run and exports it."""
    import yaml

    from redline.ci.scaffold import WORKFLOW_FILE, starter_files

    workflow = yaml.safe_load(starter_files()[WORKFLOW_FILE])
    steps = workflow["jobs"]["quality"]["steps"]
    submit = next(s for s in steps if "--batch-if-supported" in str(s.get("run", "")))
    collect = next(s for s in steps if "--resume" in str(s.get("run", "")))
    assert "--no-wait" in submit["run"] and "pending.json" in collect["if"]
    # The configured suites: `cases/`, as `redline init` lays them out.
    write_suite(project / "cases", "s", {"a": "MODE:json", "b": "MODE:json q"}, tier="quality")
    env = {
        **os.environ,
        "PYTHONPATH": str(SRC),
        KEY_ENV: SECRET,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
    }

    def step(script: str, extra: dict[str, str]) -> int:
        for expression, value in {"matrix.shard": "1"}.items():
            script = script.replace("${{ " + expression + " }}", value)
        script = script.replace("--judge ", "").replace("/2", "/1")
        done = subprocess.run(
            ["bash", "-eo", "pipefail", "-c", script],
            cwd=project,
            env=env | extra,
            capture_output=True,
            text=True,
            timeout=120,
        )
        return done.returncode

    assert step(submit["run"], {}) == 3  # submitted, pending: the step ends
    assert (project / "out/shard-1/pending.json").exists()
    assert len(server.batches) == 1 and not server.batches[0].ended
    assert step(collect["run"], {"OUT": "out/shard-1"}) == 0
    results = json.loads((project / "out/shard-1/results.json").read_text(encoding="utf-8"))
    assert results["summary"]["result"] == "green"
    assert not (project / "out/shard-1/pending.json").exists()
    assert len(server.batches) == 1 and set(server.submitted.values()) == {1}


def test_a_batch_discount_out_of_range_is_a_configuration_error_at_its_line(
    project: Path, server: BatchServer
) -> None:
    text = server.redline_toml().replace(
        "output_per_mtok = 2.0\n", "output_per_mtok = 2.0\nbatch_discount = 1.5\n", 1
    )
    (project / "redline.toml").write_text(text, encoding="utf-8")
    done = redline(project, "validate")
    assert done.returncode == 2
    line = text.splitlines().index("batch_discount = 1.5") + 1
    assert f"redline.toml:{line}" in done.stderr and "batch_discount" in done.stderr


def test_custom_ids_fit_both_apis_and_name_one_request_of_one_sample() -> None:
    import re

    from redline.providers.batching import custom_id
    from redline.vocabulary.completion import ChatRequest

    first = ChatRequest(model="m", system="s", user="u", sample=("suite", "case/ü", 3))
    again = ChatRequest(model="m", system="other", user="u", sample=("suite", "case/ü", 3))
    step = ChatRequest(model="m", system="s", user="u", sample=("suite", "case/ü", 3), step=1)
    other = ChatRequest(model="m", system="s", user="u", sample=("suite", "case/ü", 4))
    assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", custom_id(first))
    assert custom_id(first) == custom_id(again)  # the same sample's request in any process
    assert len({custom_id(first), custom_id(step), custom_id(other)}) == 3


@pytest.mark.parametrize("model", MODELS)
def test_a_tool_loop_plays_one_step_per_round(
    project: Path, server: BatchServer, model: str
) -> None:
    from test_conversations import REFUND_LOOP, agent_suite

    agent_suite(project, {"loop": REFUND_LOOP}, model=model)
    done = redline(project, "run", "agent", "--batch", "--quiet")
    assert done.returncode == 0, done.stderr
    # Three tool calls and the answer: four rounds of the case's two samples.
    assert [len(b.lines) for b in server.batches] == [2, 2, 2, 2]
    assert set(server.submitted.values()) == {1}
    with store(project) as s:
        samples = s.samples(only_run(project))
    assert [len(sample.steps) for sample in samples] == [4, 4]
    assert all(sample.output.startswith("Done: ") for sample in samples)


def test_a_tool_loop_resumed_step_by_step_never_sends_a_step_twice(
    project: Path, server: BatchServer
) -> None:
    """Each process ends with the next step's batch pending; the next one replays the
    sample's earlier steps from the batches that answered them and sends only the new step."""
    from test_conversations import REFUND_LOOP, agent_suite

    agent_suite(project, {"loop": REFUND_LOOP})
    first = redline(project, "run", "agent", "--batch", "--no-wait", "--quiet")
    assert first.returncode == 3
    run_id = only_run(project)
    codes = []
    for _ in range(6):
        codes.append(redline(project, "run", "--resume", run_id, "--no-wait", "--quiet").returncode)
        if codes[-1] != 3:
            break
    assert codes[-1] == 0 and codes[:-1] == [3] * (len(codes) - 1)
    assert [len(b.lines) for b in server.batches] == [2, 2, 2, 2]
    assert set(server.submitted.values()) == {1}
    with store(project) as s:
        assert [len(sample.steps) for sample in s.samples(run_id)] == [4, 4]


def test_an_openai_compatible_server_without_a_batch_api(tmp_path: Path) -> None:
    """--batch stops at once (exit 2, nothing judged); --batch-if-supported goes on without
    batches, at the regular price (the nightly workflow on vLLM, llama.cpp, Ollama...)."""
    from servers import LoopbackLLMServer

    with LoopbackLLMServer() as plain:
        (tmp_path / "redline.toml").write_text(plain.redline_toml(), encoding="utf-8")
        write_suite(tmp_path, "s", {"a": "MODE:json", "b": "MODE:json v"}, samples=2)
        strict = redline(tmp_path, "run", "s", "--batch", "--quiet")
        assert strict.returncode == 2
        assert "may have no batch API" in strict.stderr and "without --batch" in strict.stderr
        assert plain.count(api="openai") == 0
        lenient = redline(tmp_path, "run", "s", "--batch-if-supported", "--no-wait", "--quiet")
        assert lenient.returncode == 0, lenient.stderr
        assert "no batch API here" in lenient.stdout
        assert plain.count(api="openai") == 4
    with store(tmp_path) as s:
        latest = s.runs()[0]
        samples = s.samples(latest.id)
    for sample in samples:
        assert sample.input_tokens and sample.output_tokens
        regular = (sample.input_tokens * 1 + sample.output_tokens * 2) / 1e6
        assert sample.cost == pytest.approx(regular)


def test_a_latency_budget_is_not_held_against_a_batch_answer(
    project: Path, server: BatchServer
) -> None:
    asserts = "  - type: is-json\n  - type: max-latency-ms\n    value: 5000\n"
    write_suite(project, "s", {"a": ("MODE:json", asserts)}, samples=2)
    done = redline(project, "run", "s", "--batch", "--quiet")
    assert done.returncode == 0, done.stdout
    with store(project) as s:
        samples = s.samples(only_run(project))
    assert all(sample.latency_ms is None for sample in samples)
    latency = [r for sample in samples for r in sample.assertions if r.type == "max-latency-ms"]
    assert {str(r.status) for r in latency} == {"skipped"}
    assert all("batch" in r.reason for r in latency)


def test_a_suite_target_has_no_batch_api(project: Path) -> None:
    from redline.config import load_config
    from redline.errors import UsageError
    from redline.providers.factory import batch_wanted

    config = load_config(project)
    model = config.model("fake")
    with pytest.raises(UsageError, match=r"own target .* answers its requests itself"):
        batch_wanted(model, config, asked=True, if_supported=False, target=True)
    assert not batch_wanted(model, config, asked=None, if_supported=True, target=True)
    assert batch_wanted(model, config, asked=None, if_supported=True, target=False)


@pytest.mark.parametrize("model", MODELS)
def test_cancel_stops_a_pending_batch_keeps_what_it_answered_and_resume_sends_the_rest(
    project: Path, server: BatchServer, model: str
) -> None:
    server.default = Plan("hold", answered=2)
    write_suite(project, "s", {"a": "MODE:json", "b": "MODE:json v"}, samples=3)
    first = redline(project, "run", "s", "--batch", "--no-wait", "--quiet", "--model", model)
    assert first.returncode == 3, first.stderr
    run_id = only_run(project)
    (batch,) = server.batches

    cancel = redline(project, "cancel", run_id[:6])
    assert cancel.returncode == 0, cancel.stderr
    state = "cancelling" if model == "fake" else "canceling"
    assert f"cancel sent: batch {batch.id} {state} 0/6" in cancel.stdout
    assert f"`redline run --resume {run_id}`" in cancel.stdout
    assert server.cancel_requests == {batch.id: 1}
    with store(project) as s:
        assert s.batches(run_id)[0].status == state

    collected = redline(project, "run", "--resume", run_id, "--no-wait", "--quiet")
    assert collected.returncode == 3
    resent = server.batches[1]
    assert f"batch {resent.id} is in progress (0/4)" in collected.stderr
    assert set(resent.custom_ids) == batch.never_ran and len(batch.never_ran) == 4
    with store(project) as s:
        assert len(s.samples(run_id)) == 2
        assert [b.ended for b in s.batches(run_id)] == [True, False]

    server.release()
    done = redline(project, "run", "--resume", run_id, "--quiet")
    assert done.returncode == 0, done.stderr
    assert len(server.batches) == 2  # only what never ran went out twice
    assert {c for c, n in server.submitted.items() if n > 1} == batch.never_ran
    with store(project) as s:
        assert len(s.samples(run_id)) == 6
    again = redline(project, "cancel", run_id)
    assert again.returncode == 0
    assert "no batch is pending (2 batch(es), all ended)" in again.stdout
    assert server.cancel_requests == {batch.id: 1}


def test_cancel_of_a_run_without_batches_is_a_usage_error(
    project: Path, server: BatchServer
) -> None:
    from servers import LoopbackLLMServer

    write_suite(project, "s", {"a": "MODE:json"}, samples=1)
    with LoopbackLLMServer() as plain_server:
        (project / "redline.toml").write_text(plain_server.redline_toml(), encoding="utf-8")
        assert redline(project, "run", "s", "--quiet").returncode == 0
        cancel = redline(project, "cancel", only_run(project))
    assert cancel.returncode == 2
    assert "sent no batches" in cancel.stderr and "--batch" in cancel.stderr
    assert not server.cancel_requests
