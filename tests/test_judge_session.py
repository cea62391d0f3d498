"""The judge inside a run, against the real loopback server: fail fast, trust, structured output."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from casefiles import slop_rubric
from redline.assertions import SampleEvaluation, evaluate_sample
from redline.assertions.judge import NOT_ENABLED
from redline.config import Config, parse_config
from redline.errors import ProblemsError
from redline.judge import (
    JudgeStatus,
    calibration_path,
    cohens_kappa,
    fingerprint,
    judge_output,
    judge_provider,
    load_rubric,
    write_calibration,
)
from redline.judge.agreement import FAIL, PASS
from redline.judge.calibration import Calibration
from redline.judge.call import JUDGE_TOOL, ToolCallAnthropicProvider
from redline.providers.factory import make_provider
from redline.running.judging import JudgeSession, judge_pending
from redline.suite.cases import Case, Suite, load_suite
from redline.vocabulary.completion import ChatRequest
from redline.vocabulary.outcome import case_outcome
from redline.vocabulary.records import CaseOutcome
from redline.vocabulary.verdicts import AssertionStatus, Verdict
from servers import LoopbackLLMServer

GOOD = '{"score": 1, "reasoning": "straight to the point", "is_concise": true}'
SLOPPY = '{"score": 5, "reasoning": "all filler", "is_concise": false}'

RUBRIC = slop_rubric()


def _case(case_id: str, answer: str, needle: str, rubric: str = "rubrics/slop.yaml") -> str:
    return (
        f"id: {case_id}\nprovenance:\n  ticket: T-1\n"
        f"vars:\n  q: {json.dumps('MODE:echo ' + answer)}\n"
        f"assert:\n  - type: contains\n    value: {json.dumps(needle)}\n"
        f"  - type: judge\n    rubric: {rubric}\n"
    )


def write_judged_suite(folder: Path) -> Path:
    """A suite `judged` on model `fake` whose cases exercise every judge path."""
    (folder / "prompts").mkdir(parents=True)
    (folder / "rubrics").mkdir()
    (folder / "prompts" / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: judged\nprompt:\n  system: prompts/system.txt\n  user: '{{q}}'\n"
        "model: fake\nsamples: 3\ntier: quality\n",
        encoding="utf-8",
    )
    (folder / "rubrics" / "slop.yaml").write_text(RUBRIC, encoding="utf-8")
    (folder / "rubrics" / "unreachable.yaml").write_text(
        RUBRIC.replace("name: slop", "name: unreachable").replace(
            'prompt: "MODE:echo {{output}}"', 'prompt: "{{output}} MODE:500"'
        ),
        encoding="utf-8",
    )
    cases = {
        "0001-good.yaml": _case("0001-good", GOOD, "score"),
        "0002-layer1-fails.yaml": _case("0002-layer1-fails", GOOD, "NEVER-IN-THE-OUTPUT"),
        "0003-sloppy.yaml": _case("0003-sloppy", SLOPPY, "score"),
        "0004-malformed.yaml": _case("0004-malformed", "Great question! Score: one", "question"),
        "0005-judge-down.yaml": _case("0005-judge-down", GOOD, "score", "rubrics/unreachable.yaml"),
    }
    for name, text in cases.items():
        (folder / name).write_text(text, encoding="utf-8")
    return folder


@pytest.fixture
def suite_dir(tmp_path: Path, loopback_config: Config) -> Path:
    return write_judged_suite(tmp_path / "judged")


@pytest.fixture
def suite(suite_dir: Path, loopback_config: Config) -> Suite:
    return load_suite(suite_dir, loopback_config)


def trust_rubric(config: Config, rubric_file: Path) -> None:
    """Write a current calibration with perfect agreement on 22 labels."""
    rubric = load_rubric(rubric_file)
    labels = [PASS] * 12 + [FAIL] * 10
    agreement = cohens_kappa(labels, labels)
    write_calibration(
        calibration_path(rubric_file),
        Calibration(
            rubric=rubric.name,
            kappa=agreement.kappa,
            n=agreement.n,
            observed=agreement.observed,
            chance=agreement.chance,
            confusion=agreement.confusion,
            date="2026-11-30",
            fingerprint=fingerprint(rubric, config.model(rubric.model).id),
            min_kappa=rubric.min_kappa,
        ),
    )


def judge_requests(server: LoopbackLLMServer) -> int:
    return sum(1 for r in server.requests if "response_format" in (r.body or {}))


async def _samples(
    suite: Suite, case: Case, config: Config, session: JudgeSession | None, n: int = 3
) -> list[SampleEvaluation]:
    provider = make_provider(config.model(suite.model), config)
    system, user = suite.render(case)
    results = []
    try:
        for seed in range(n):
            request = ChatRequest(
                model="fake-model-2025-01-01", system=system, user=user, seed=seed
            )
            completion = await provider.complete(request)
            evaluation = evaluate_sample(case, completion)
            if session is not None:
                evaluation = await judge_pending(session, case, completion, evaluation, seed=seed)
            results.append(evaluation)
    finally:
        await provider.aclose()
    return results


def _run(
    suite: Suite, case_id: str, config: Config, *, blocks: bool | None
) -> list[SampleEvaluation]:
    async def go() -> list[SampleEvaluation]:
        session = None if blocks is None else JudgeSession.open([suite], config, blocks=blocks)
        try:
            return await _samples(suite, suite.case(case_id), config, session)
        finally:
            if session is not None:
                await session.aclose()

    return asyncio.run(go())


def _judge_result(evaluation: SampleEvaluation) -> Any:
    return next(r for r in evaluation.results if r.type == "judge")


@pytest.mark.usefixtures("loopback_key")
def test_without_judge_flag_the_result_is_skipped_never_passed(
    suite: Suite, loopback_config: Config, llm_server: LoopbackLLMServer
) -> None:
    for evaluation in _run(suite, "0001-good", loopback_config, blocks=None):
        result = _judge_result(evaluation)
        assert result.status is AssertionStatus.SKIPPED
        assert result.reason == NOT_ENABLED
        assert evaluation.verdict is Verdict.OK
    assert judge_requests(llm_server) == 0


@pytest.mark.usefixtures("loopback_key")
def test_layer1_failure_means_the_judge_is_never_called(
    suite: Suite, loopback_config: Config, llm_server: LoopbackLLMServer, suite_dir: Path
) -> None:
    trust_rubric(loopback_config, suite_dir / "rubrics" / "slop.yaml")
    failed = _run(suite, "0002-layer1-fails", loopback_config, blocks=True)
    assert llm_server.count() == 3
    assert judge_requests(llm_server) == 0
    for evaluation in failed:
        assert evaluation.verdict is Verdict.WRONG
        result = _judge_result(evaluation)
        assert result.status is AssertionStatus.SKIPPED
        assert "earlier layer failed (contains)" in result.reason

    passed = _run(suite, "0001-good", loopback_config, blocks=True)
    assert judge_requests(llm_server) == 3
    for evaluation in passed:
        result = _judge_result(evaluation)
        assert (result.status, result.score, evaluation.verdict) == (
            AssertionStatus.PASSED,
            1.0,
            Verdict.OK,
        )
        assert "is_concise=yes" in result.reason


@pytest.mark.usefixtures("loopback_key")
def test_advisory_judge_cannot_fail_a_sample_or_a_case(
    suite: Suite, loopback_config: Config, llm_server: LoopbackLLMServer
) -> None:
    for case_id in ("0003-sloppy", "0004-malformed"):
        evaluations = _run(suite, case_id, loopback_config, blocks=True)
        for evaluation in evaluations:
            result = _judge_result(evaluation)
            assert result.status is AssertionStatus.FAILED
            assert result.reason.startswith("advisory (not calibrated")
            assert evaluation.verdict is Verdict.OK
        verdicts = {Verdict.OK: sum(e.verdict is Verdict.OK for e in evaluations)}
        assert case_outcome(3, verdicts) is CaseOutcome.PASS
    assert judge_requests(llm_server) == 6


@pytest.mark.usefixtures("loopback_key")
def test_trusted_judge_fails_samples_only_with_judge_blocks(
    suite: Suite, loopback_config: Config, suite_dir: Path
) -> None:
    trust_rubric(loopback_config, suite_dir / "rubrics" / "slop.yaml")
    commenting = _run(suite, "0003-sloppy", loopback_config, blocks=False)
    assert {e.verdict for e in commenting} == {Verdict.OK}
    assert "--judge-blocks not given" in _judge_result(commenting[0]).reason

    blocking = _run(suite, "0003-sloppy", loopback_config, blocks=True)
    assert {e.verdict for e in blocking} == {Verdict.WRONG}
    result = _judge_result(blocking[0])
    assert (result.score, result.threshold) == (5.0, 2.0)
    assert "score 5 (pass: score ≤ 2)" in result.reason

    malformed = _run(suite, "0004-malformed", loopback_config, blocks=True)
    assert {e.verdict for e in malformed} == {Verdict.MALFORMED}
    result = _judge_result(malformed[0])
    assert result.structural and "not JSON" in result.reason
    assert "raw judge text: 'Great question! Score: one'" in result.reason


@pytest.mark.usefixtures("loopback_key")
def test_failed_judge_call_is_transport_when_blocking_and_unavailable_otherwise(
    suite: Suite, loopback_config: Config, suite_dir: Path
) -> None:
    advisory = _run(suite, "0005-judge-down", loopback_config, blocks=True)
    assert {e.verdict for e in advisory} == {Verdict.OK}
    assert _judge_result(advisory[0]).status is AssertionStatus.UNAVAILABLE

    trust_rubric(loopback_config, suite_dir / "rubrics" / "unreachable.yaml")
    blocking = _run(suite, "0005-judge-down", loopback_config, blocks=True)
    assert {e.verdict for e in blocking} == {Verdict.TRANSPORT}
    assert "HTTP 500" in _judge_result(blocking[0]).reason


@pytest.mark.usefixtures("loopback_key")
def test_stale_calibration_makes_the_judge_advisory(
    suite_dir: Path, loopback_config: Config
) -> None:
    rubric_file = suite_dir / "rubrics" / "slop.yaml"
    trust_rubric(loopback_config, rubric_file)
    session = JudgeSession.open([load_suite(suite_dir, loopback_config)], loopback_config)
    assert session.trust[rubric_file.resolve()].trusted
    rubric_file.write_text(RUBRIC.replace("Full of filler.", "Mostly filler."), encoding="utf-8")
    session = JudgeSession.open([load_suite(suite_dir, loopback_config)], loopback_config)
    header = "\n".join(session.header())
    assert "judge slop" in header and "advisory: calibration is stale: rubric file" in header
    assert "judge unreachable" in header and "not calibrated" in header
    assert all(not entry["trusted"] for entry in session.record().values())


@pytest.mark.usefixtures("loopback_key")
def test_openai_judge_request_asks_for_the_answer_json_schema(
    suite: Suite, loopback_config: Config, llm_server: LoopbackLLMServer
) -> None:
    _run(suite, "0001-good", loopback_config, blocks=False)
    body = next(r.body for r in llm_server.requests if "response_format" in r.body)
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    schema = response_format["json_schema"]["schema"]
    assert schema["required"] == ["score", "reasoning", "is_concise"]
    assert schema["properties"]["score"]["maximum"] == 5
    assert schema["additionalProperties"] is False
    system = body["messages"][0]["content"]
    assert "5: Full of filler." in system and "2: between 1 and 3" in system
    assert body["messages"][1]["content"] == f"MODE:echo {GOOD}"
    assert body["temperature"] == 0


def test_case_problems_with_a_judge_are_reported_with_lines(
    suite_dir: Path, loopback_config: Config
) -> None:
    (suite_dir / "0009-broken.yaml").write_text(
        "id: 0009-broken\nprovenance:\n  ticket: T-9\nvars:\n  q: hi\nassert:\n"
        "  - type: judge\n    rubric: rubrics/missing.yaml\n"
        "  - type: judge\n    rubric: rubrics/needs-var.yaml\n"
        "  - type: judge\n    rubric: rubrics/other-model.yaml\n",
        encoding="utf-8",
    )
    rubrics = suite_dir / "rubrics"
    (rubrics / "needs-var.yaml").write_text(
        RUBRIC.replace("name: slop", "name: needs-var").replace(
            'prompt: "MODE:echo {{output}}"', 'prompt: "{{question}} {{output}}"'
        ),
        encoding="utf-8",
    )
    (rubrics / "other-model.yaml").write_text(
        RUBRIC.replace("name: slop", "name: other").replace("model: fake", "model: gpt-judge"),
        encoding="utf-8",
    )
    with pytest.raises(ProblemsError) as caught:
        load_suite(suite_dir, loopback_config)
    mine = [p for p in caught.value.problems if p.path.endswith("0009-broken.yaml")]
    assert [p.line for p in mine] == [8, 10, 12]
    text = " | ".join(p.message for p in mine)
    assert "missing.yaml does not exist" in text
    assert "uses {{question}} but the case has no var 'question'" in text
    assert "judge model 'gpt-judge', which is not pinned" in text


class _ToolServer(ThreadingHTTPServer):
    bodies: list[Any]


class _ToolHandler(BaseHTTPRequestHandler):
    """An Anthropic Messages endpoint that answers every request with one tool call."""

    server: _ToolServer

    def log_message(self, format: str, *args: Any) -> None:
        """No access log."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        self.server.bodies.append(body)
        reply = {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": body["model"],
            "content": [
                {"type": "text", "text": "Recording my judgement."},
                {
                    "type": "tool_use",
                    "id": "toolu_1",
                    "name": JUDGE_TOOL,
                    "input": {"score": 2, "reasoning": "one transition", "is_concise": True},
                },
            ],
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def tool_server() -> Iterator[_ToolServer]:
    server = _ToolServer(("127.0.0.1", 0), _ToolHandler)
    server.bodies = []
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    yield server
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)


def test_anthropic_judge_is_forced_to_call_the_answer_tool(
    tmp_path: Path, tool_server: _ToolServer
) -> None:
    port = tool_server.server_address[1]
    (tmp_path / "redline.toml").write_text(
        '[models]\nclaude = "anthropic:claude-judge-2025-01-01"\n\n[providers.anthropic]\n'
        f'base_url = "http://127.0.0.1:{port}"\napi_key_env = "JUDGE_KEY"\nmax_retries = 0\n',
        encoding="utf-8",
    )
    config = parse_config(tmp_path / "redline.toml")
    rubric_file = tmp_path / "slop.yaml"
    rubric_file.write_text(RUBRIC.replace("model: fake", "model: claude"), encoding="utf-8")
    rubric = load_rubric(rubric_file)
    model = config.model("claude")
    provider = judge_provider(model, config, {"JUDGE_KEY": "k-test"})
    assert isinstance(provider, ToolCallAnthropicProvider)

    async def go() -> Any:
        try:
            return await judge_output(provider, rubric, model, "Idempotent means...", {})
        finally:
            await provider.aclose()

    judgement = asyncio.run(go())
    assert (judgement.status, judgement.score) == (JudgeStatus.PASSED, 2)
    assert judgement.checks == {"is_concise": True}
    body = tool_server.bodies[0]
    assert body["tool_choice"] == {"type": "tool", "name": JUDGE_TOOL}
    assert body["tools"][0]["input_schema"]["required"] == ["score", "reasoning", "is_concise"]
    assert "x-api-key" not in json.dumps(body)
