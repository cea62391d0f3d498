"""Your code as the target: the example app through each target kind, and targets that
misbehave (hang, crash, raise, leak, print garbage) costing one sample, never the run."""

from __future__ import annotations

import sys
import textwrap
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from exampleapp import write_app
from redline.cli import main
from redline.config import load_config
from redline.errors import CredentialsRejected, ProblemsError
from redline.running.options import RunOptions
from redline.running.runner import run_suites
from redline.running.store import RunStore
from redline.suite.cases import load_suite
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer

pytest_plugins = ["pytester"]


@pytest.fixture
def app_env(llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> LoopbackLLMServer:
    monkeypatch.setenv("LOOPBACK_BASE_URL", llm_server.openai_base_url)
    return llm_server


def run(suite: Path, **options: object):  # type: ignore[no-untyped-def]
    config = load_config(suite)
    store = RunStore.open(suite.parent.parent / ".redline" / "runs.db")
    record = run_suites([load_suite(suite, config)], config, store, RunOptions(**options))  # type: ignore[arg-type]
    return record, store.samples(record.id)


@pytest.mark.parametrize("kind", ["python", "command"])
def test_the_example_app_passes_through_each_local_target_kind(
    tmp_path: Path, app_env: LoopbackLLMServer, kind: str
) -> None:
    suite = write_app(tmp_path, kind)
    record, samples = run(suite)
    assert [s.verdict for s in samples] == [Verdict.OK, Verdict.OK], [s.error for s in samples]
    # the app rendered its own Jinja template, retrieved the policy and post-processed
    assert "[1] Refund policy" in samples[0].output and "\n" not in samples[0].output
    assert record.manifest["support/@target"].startswith(kind + ":")
    assert "../supportbot/prompts/answer.j2" in record.manifest
    assert "support/@code" in record.manifest
    assert samples[0].input_tokens is not None


def test_the_pinned_model_reaches_the_app_through_its_model_env(
    tmp_path: Path, app_env: LoopbackLLMServer
) -> None:
    suite = write_app(tmp_path)
    (tmp_path / "redline.toml").write_text(
        'concurrency = 2\n[models]\nbot = "openai:bot-model-2026-02-01"\n', encoding="utf-8"
    )
    text = (suite / "suite.yaml").read_text()
    (suite / "suite.yaml").write_text(text + "model: bot\n", encoding="utf-8")
    app_env.reset()
    record, samples = run(suite)
    assert record.model_id == "openai:bot-model-2026-02-01"
    assert {r.body["model"] for r in app_env.requests} == {"bot-model-2026-02-01"}
    assert all(s.verdict is Verdict.OK for s in samples)


@pytest.fixture
def app_server(
    tmp_path: Path, app_env: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[str]:
    monkeypatch.setenv("SUPPORTBOT_BASE_URL", app_env.openai_base_url)
    write_app(tmp_path)
    sys.path.insert(0, str(tmp_path))
    try:
        from supportbot.server import serve  # type: ignore[import-not-found]

        server = serve()
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        yield f"http://127.0.0.1:{server.server_address[1]}/ask"
        server.shutdown()
    finally:
        sys.path.remove(str(tmp_path))
        for name in [m for m in sys.modules if m.startswith("supportbot")]:
            del sys.modules[name]


def test_the_example_app_passes_through_its_http_endpoint(
    tmp_path: Path, app_server: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("APP_KEY", "k-secret-123")
    http = textwrap.dedent(
        f"""\
        http:
          url: {app_server}
          headers: {{x-app-key: "${{APP_KEY}}"}}
          body: {{question: "{{{{ question }}}}", tone: "{{{{ tone }}}}"}}
          answer: $.data.reply
          model: $.data.model"""
    )
    suite = write_app(tmp_path, http)
    record, samples = run(suite)
    assert [s.verdict for s in samples] == [Verdict.OK, Verdict.OK], [s.error for s in samples]
    assert record.model_id == f"target:http:{app_server}"
    monkeypatch.setenv("APP_KEY", "wrong-key-456")
    with pytest.raises(CredentialsRejected) as refused:
        run(suite)
    assert "HTTP 401" in str(refused.value) and "wrong-key-456" not in str(refused.value)


MISBEHAVING = """
import os, sys, time

def hang(case):
    if case["vars"]["question"] == "hang":
        time.sleep(600)
    return "fine"

def crash(case):
    if case["vars"]["question"] == "crash":
        os._exit(3)
    return "fine"

def boom(case):
    if case["vars"]["question"] == "boom":
        raise ValueError("the retriever is down")
    return "fine"

hoard = []

def leak(case):
    if case["vars"]["question"] == "leak":
        while True:
            hoard.append(bytearray(16 * 1024 * 1024))
    return "fine"

def noisy(case):
    print("debug: thinking very hard")
    os.write(1, b"raw bytes on fd 1\\n")
    return "fine"

async def slow_async(case):
    import asyncio
    await asyncio.sleep(0.01)
    return {"text": "fine", "tool_calls": [{"name": "lookup", "arguments": {"id": 7}}]}
"""


def _bad_suite(root: Path, target: str, questions: list[str], extra: str = "") -> Path:
    (root / "badapp.py").write_text(MISBEHAVING, encoding="utf-8")
    (root / "redline.toml").write_text("concurrency = 2\n[models]\n", encoding="utf-8")
    suite = root / "cases" / "bad"
    suite.mkdir(parents=True, exist_ok=True)
    (suite / "suite.yaml").write_text(
        f"name: bad\nsamples: 1\ntarget:\n  {target}\n  root: ../..\n  timeout_s: 5\n{extra}",
        encoding="utf-8",
    )
    for q in questions:
        (suite / f"{q}.yaml").write_text(
            f"id: {q}\nprovenance: {{ticket: T-{q}}}\nvars: {{question: {q}}}\n"
            "assert:\n  - {type: contains, value: fine}\n",
            encoding="utf-8",
        )
    return suite


@pytest.mark.parametrize(
    ("function", "extra", "said"),
    [
        ("hang", "", "did not answer within 5 s"),
        ("crash", "", "worker process died (exit code 3)"),
        ("boom", "", "ValueError: the retriever is down"),
        ("leak", "  max_memory_mb: 400\n", "MemoryError"),
    ],
)
def test_a_misbehaving_python_target_costs_one_sample(
    tmp_path: Path, function: str, extra: str, said: str
) -> None:
    suite = _bad_suite(tmp_path, f"python: badapp:{function}", [function, "calm", "quiet"], extra)
    started = time.monotonic()
    _record, samples = run(suite)
    by_case = {s.case_id: s for s in samples}
    assert by_case[function].verdict is Verdict.TRANSPORT
    assert said in (by_case[function].error or "")
    assert by_case["calm"].verdict is Verdict.OK and by_case["quiet"].verdict is Verdict.OK
    assert time.monotonic() - started < 30


def test_a_target_that_cannot_be_loaded_says_so_on_each_sample(tmp_path: Path) -> None:
    suite = _bad_suite(tmp_path, "python: badapp:no_such_function", ["calm", "quiet"])
    _record, samples = run(suite)
    assert [s.verdict for s in samples] == [Verdict.TRANSPORT, Verdict.TRANSPORT]
    assert all("could not be loaded" in (s.error or "") for s in samples)
    assert "has no function 'no_such_function'" in (samples[0].error or "")


def test_a_raised_exception_keeps_its_traceback(tmp_path: Path) -> None:
    suite = _bad_suite(tmp_path, "python: badapp:boom", ["boom"])
    _record, [sample] = run(suite)
    assert "Traceback (most recent call last)" in (sample.error or "")
    assert 'badapp.py", line' in (sample.error or "")


def test_what_a_python_target_prints_stays_off_redlines_output(
    tmp_path: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    suite = _bad_suite(tmp_path, "python: badapp:noisy", ["calm"])
    _record, [sample] = run(suite)
    assert sample.verdict is Verdict.OK
    out, _err = capfd.readouterr()
    assert "debug: thinking" not in out and "raw bytes" not in out


def test_an_async_target_answers_with_tool_calls(tmp_path: Path) -> None:
    suite = _bad_suite(tmp_path, "python: badapp:slow_async", ["calm"])
    _record, [sample] = run(suite)
    assert sample.verdict is Verdict.OK
    assert [(c.name, c.arguments) for c in sample.tool_calls] == [("lookup", '{"id":7}')]


COMMANDS = {
    "garbage": "import sys; sys.stdout.write('%%%% not json at all')",
    "hang": "import time; time.sleep(600)",
    "fails": "import sys; sys.stderr.write('db unreachable'); sys.exit(4)",
    "logs": "print('loading...'); print('{\"text\": \"fine\"}')",
}


@pytest.mark.parametrize(
    ("script", "verdict", "said"),
    [
        ("garbage", Verdict.TRANSPORT, "wrote no JSON answer on stdout"),
        ("hang", Verdict.TRANSPORT, "did not answer within 5 s"),
        ("fails", Verdict.TRANSPORT, "exited with code 4\ndb unreachable"),
        ("logs", Verdict.OK, ""),
    ],
)
def test_a_command_target_that_misbehaves(
    tmp_path: Path, script: str, verdict: Verdict, said: str
) -> None:
    (tmp_path / "tool.py").write_text(COMMANDS[script], encoding="utf-8")
    suite = _bad_suite(tmp_path, f"command: [{sys.executable}, tool.py]", ["calm"])
    started = time.monotonic()
    _record, [sample] = run(suite)
    assert sample.verdict is verdict, sample.error
    assert said in (sample.error or "")
    assert time.monotonic() - started < 20


def test_validate_names_each_bad_target_setting_at_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = _bad_suite(
        tmp_path,
        "python: badapp\n  prompt_files: [nothing/*.j2]\n  workers: 0\n  colour: red",
        ["calm"],
    )
    with pytest.raises(ProblemsError) as raised:
        load_suite(suite, load_config(suite))
    shown = "\n".join(str(p) for p in raised.value.problems)
    assert "suite.yaml:4:" in shown and "`python` must be `package.module:function`" in shown
    assert "unknown key 'colour'" in shown
    assert "target.workers must be a positive integer (at least 1), got 0" in shown
    (tmp_path / "two").mkdir()
    both = _bad_suite(tmp_path / "two", "python: badapp:boom\n  command: [x]", ["calm"])
    with pytest.raises(ProblemsError) as raised:
        load_suite(both, load_config(both))
    assert "exactly one of python, http, command" in str(raised.value.problems[0])
    assert main(["validate", str(suite)]) == 2


def test_pytest_collects_a_target_suite_like_a_run(
    pytester: pytest.Pytester, app_env: LoopbackLLMServer
) -> None:
    write_app(pytester.path)
    bad = pytester.path / "cases" / "support" / "shipping.yaml"
    bad.write_text(
        "id: shipping\nprovenance: {ticket: SUP-2}\nvars: {question: When do you ship?}\n"
        "assert:\n  - {type: contains, value: refunds are paid}\n",
        encoding="utf-8",
    )
    result = pytester.runpytest_inprocess("-p", "no:textual-snapshot", "cases", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*refund-window PASSED*", "*shipping FAILED*"])


def test_the_apps_code_is_one_input_shown_as_changed(
    tmp_path: Path, app_env: LoopbackLLMServer
) -> None:
    from redline.deciding.compare import manifest_changes

    suite = write_app(tmp_path)
    first, _ = run(suite)
    retrieval = tmp_path / "supportbot" / "retrieval.py"
    retrieval.write_text(retrieval.read_text() + "\n# faster index\n", encoding="utf-8")
    second, _ = run(suite)
    assert [m.path for m in manifest_changes(first.manifest, second.manifest)] == ["support/@code"]
    template = tmp_path / "supportbot" / "prompts" / "answer.j2"
    template.write_text(template.read_text() + "Thank them.\n", encoding="utf-8")
    third, _ = run(suite)
    assert [m.path for m in manifest_changes(second.manifest, third.manifest)] == [
        "../supportbot/prompts/answer.j2"
    ]


KEYWORD_APP = """
import dataclasses

@dataclasses.dataclass
class Reply:
    text: str
    model: str = "kw-model-2026-01-01"

def answer(vars, messages, seed=None):
    return Reply(text="fine " + vars["question"])
"""


def test_a_target_may_take_the_case_by_name_and_answer_with_a_dataclass(tmp_path: Path) -> None:
    suite = _bad_suite(tmp_path, "python: kwapp:answer", ["calm"])
    (tmp_path / "kwapp.py").write_text(KEYWORD_APP, encoding="utf-8")
    _record, [sample] = run(suite)
    assert sample.verdict is Verdict.OK, sample.error
    assert sample.output == "fine calm" and sample.model == "kw-model-2026-01-01"


@pytest.mark.parametrize("reported", ["gpt-4o-latest", "openai:chatgpt-4o-LATEST"])
def test_a_target_reporting_a_moving_alias_is_refused_on_that_sample(reported: str) -> None:
    """An answer from a model alias that moves under you is no evidence of one model."""
    from redline.targets.answer import BadAnswer, read_answer

    with pytest.raises(BadAnswer, match="aliases like 'latest' move under you"):
        read_answer({"text": "ok", "model": reported}, latency_ms=1.0, model="app")
    pinned = read_answer({"text": "ok", "model": "gpt-4o-2024-08-06"}, latency_ms=1.0, model="app")
    assert pinned.model == "gpt-4o-2024-08-06"
