"""Cases for real applications, run as a user runs them: conversations, tool calls kept as
received, offline tool loops, structured output and images, in both wire formats against
the loopback server (tests/servers.py), through run, store, export/import and replay."""

from __future__ import annotations

import base64
import json
import textwrap
from pathlib import Path

import pytest

from redline.cli import main
from redline.running.exchange import export_run, read_export
from redline.running.store import RunStore
from redline.vocabulary.messages import LoopEnd, ToolCall
from redline.vocabulary.records import SampleRecord
from redline.vocabulary.verdicts import Verdict
from servers import LoopbackLLMServer
from test_runner import KEY_ENV, SECRET, write_config

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "description": "Find an order by id",
            "parameters": {
                "type": "object",
                "properties": {"order_id": {"type": "string"}},
                "required": ["order_id"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "issue_refund",
            "description": "Refund an order",
            "parameters": {
                "type": "object",
                "properties": {
                    "order_id": {"type": "string"},
                    "amount_cents": {"type": "integer", "maximum": 50000},
                },
                "required": ["order_id", "amount_cents"],
            },
        },
    },
]
PROVENANCE = "provenance: {ticket: SUP-7, reported: 2026-03-01, note: refund agent}\n"


@pytest.fixture
def project(tmp_path: Path, llm_server: LoopbackLLMServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv(KEY_ENV, SECRET)
    write_config(tmp_path, llm_server)
    monkeypatch.chdir(tmp_path)
    return tmp_path


def agent_suite(
    root: Path,
    cases: dict[str, str],
    *,
    model: str = "fake",
    extra: str = "",
    files: dict[str, str | bytes] | None = None,
) -> Path:
    """A suite declaring TOOLS (from a JSON file), one case file per entry of `cases`."""
    folder = root / "agent"
    (folder / "tools").mkdir(parents=True, exist_ok=True)
    (folder / "tools" / "support.json").write_text(json.dumps(TOOLS, indent=2), "utf-8")
    (folder / "system.txt").write_text("You are the refunds agent.\n", "utf-8")
    (folder / "suite.yaml").write_text(
        "name: agent\nprompt:\n  system: system.txt\n"
        f"model: {model}\nsamples: 2\ntools: file://tools/support.json\n{extra}",
        "utf-8",
    )
    for name, content in (files or {}).items():
        path = folder / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, "utf-8")
    for case_id, body in cases.items():
        (folder / f"{case_id}.yaml").write_text(
            f"id: {case_id}\n{PROVENANCE}" + textwrap.dedent(body), "utf-8"
        )
    return folder


def samples_of(project: Path, case_id: str) -> list[SampleRecord]:
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        return store.samples(run.id, case_id)


REFUND_LOOP = """\
messages:
  - role: user
    content: >-
      Order A-1 arrived broken, refund me.
      MODE:tool STEPS:3 CALL:lookup_order ARGS:{"order_id":"A-1"}
tool_results:
  - tool: lookup_order
    args: {order_id: A-1}
    content: '{"status": "delivered", "total_cents": 4200}'
max_steps: 5
assert:
  - {type: tool-called, value: lookup_order, times: 3, args: {required: [order_id]}}
  - {type: tool-not-called, value: issue_refund}
  - {type: tool-args-valid}
  - {type: contains, value: delivered}
"""


@pytest.mark.parametrize("model", ["fake", "fake-anthropic"])
def test_a_tool_loop_plays_every_step_offline_and_keeps_each_one(
    project: Path, llm_server: LoopbackLLMServer, model: str
) -> None:
    agent_suite(project, {"loop": REFUND_LOOP}, model=model)

    assert main(["run", "agent", "--quiet"]) == 0

    samples = samples_of(project, "loop")
    assert [s.verdict for s in samples] == [Verdict.OK, Verdict.OK]
    sample = samples[0]
    assert sample.loop_end is LoopEnd.ANSWERED
    assert [len(step.tool_calls) for step in sample.steps] == [1, 1, 1, 0]
    assert sample.steps[0].tool_calls[0].name == "lookup_order"
    assert json.loads(sample.steps[0].tool_calls[0].arguments) == {"order_id": "A-1"}
    fixture = '{"status": "delivered", "total_cents": 4200}'
    assert [r.content for r in sample.steps[1].tool_results] == [fixture]
    assert sample.output == f"Done: {fixture}"
    # Four requests per sample, each answering the calls of the one before.
    bodies = [r.body for r in llm_server.requests]
    assert len(bodies) == 8
    first = 2 if model == "fake" else 1  # OpenAI sends the system prompt as a message
    lengths = [first + 2 * k for k in range(4) for _ in range(2)]
    assert sorted(len(b["messages"]) for b in bodies) == lengths
    last = max((b["messages"] for b in bodies), key=len)
    if model == "fake":
        assert [m["role"] for m in last] == ["system", "user"] + ["assistant", "tool"] * 3
        assert last[2]["tool_calls"][0]["id"] == "call_0_0"
        assert last[3] == {"role": "tool", "content": fixture, "tool_call_id": "call_0_0"}
        assert bodies[0]["tools"] == TOOLS
    else:
        assert [m["role"] for m in last] == ["user"] + ["assistant", "user"] * 3
        assert last[1]["content"][0] == {
            "type": "tool_use",
            "id": "toolu_0_0",
            "name": "lookup_order",
            "input": {"order_id": "A-1"},
        }
        assert last[2]["content"] == [
            {"type": "tool_result", "tool_use_id": "toolu_0_0", "content": fixture}
        ]
        assert bodies[0]["tools"][0]["input_schema"] == TOOLS[0]["function"]["parameters"]  # type: ignore[index]
    # The sample's totals are the loop's.
    assert sample.input_tokens == sum(s.input_tokens or 0 for s in sample.steps)


def test_parallel_calls_are_stored_exactly_as_received(project: Path) -> None:
    agent_suite(
        project,
        {
            "both": """\
            messages:
              - role: user
                content: >-
                  MODE:tool CALL:lookup_order,issue_refund
                  ARGS:{"order_id":"A-1","amount_cents":900}
            assert:
              - {type: tool-called, value: lookup_order, order: 1}
              - type: tool-called
                value: issue_refund
                order: 2
                python: "args['amount_cents'] < 1000"
              - {type: tool-args-valid}
            """
        },
    )

    assert main(["run", "agent", "--quiet"]) == 0

    (sample, _) = samples_of(project, "both")
    raw = '{"order_id":"A-1","amount_cents":900}'
    assert sample.tool_calls == (
        ToolCall("call_0_0", "lookup_order", raw),
        ToolCall("call_0_1", "issue_refund", raw),
    )
    assert sample.finish_reason == "tool_calls" and sample.verdict is Verdict.OK
    assert sample.steps == ()  # no fixtures: one request, no loop


@pytest.mark.parametrize(
    ("case", "verdict", "failing", "end"),
    [
        # The model's arguments are not JSON: the output is malformed.
        ("MODE:tool-bad-args", Verdict.MALFORMED, "tool-call-arguments", None),
        # A tool nobody declared: the calls are not valid.
        ("MODE:tool CALL:drop_database", Verdict.MALFORMED, "tool-args-valid", None),
        # The agent never stops calling: the loop ends at max_steps, with no answer.
        (
            'MODE:tool STEPS:inf ARGS:{"order_id":"A-1"}',
            Verdict.WRONG,
            "max-steps",
            LoopEnd.MAX_STEPS,
        ),
    ],
)
def test_bad_calls_and_endless_loops_get_honest_verdicts(
    project: Path, case: str, verdict: Verdict, failing: str, end: LoopEnd | None
) -> None:
    loop = "tool_results:\n  - {tool: lookup_order, content: found}\nmax_steps: 3\n"
    agent_suite(
        project,
        {
            "bad": f"messages:\n  - {{role: user, content: '{case}'}}\n{loop if end else ''}"
            "assert:\n  - {type: tool-args-valid}\n"
        },
    )

    assert main(["run", "agent", "--quiet"]) == 1

    sample = samples_of(project, "bad")[0]
    assert sample.verdict is verdict
    assert failing in {r.type for r in sample.assertions if r.failed}
    assert sample.loop_end is end
    if end is LoopEnd.MAX_STEPS:
        assert len(sample.steps) == 3


def test_a_call_no_fixture_answers_ends_the_loop_and_the_answer_is_that_call(
    project: Path,
) -> None:
    agent_suite(
        project,
        {
            "unanswered": """\
            messages:
              - role: user
                content: >-
                  MODE:tool CALL:issue_refund ARGS:{"order_id":"A-1","amount_cents":100}
            tool_results:
              - {tool: lookup_order, content: found}
            assert:
              - {type: tool-not-called, value: issue_refund}
            """
        },
    )

    assert main(["run", "agent", "--quiet"]) == 1

    sample = samples_of(project, "unanswered")[0]
    assert sample.loop_end is LoopEnd.UNANSWERED
    assert len(sample.steps) == 1 and sample.steps[0].tool_results == ()
    assert [c.name for c in sample.tool_calls] == ["issue_refund"]
    assert sample.verdict is Verdict.WRONG


def test_steps_survive_export_import_and_replay_rescoring_reproduces_verdicts(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_suite(project, {"loop": REFUND_LOOP})
    assert main(["run", "agent", "--quiet"]) == 0
    with RunStore.open(project / ".redline" / "redline.db") as store:
        run = store.latest_run(kind=None)
        assert run is not None
        original = store.samples(run.id)
        exported = read_export(export_run(store, run.id, project / "out"))
    assert exported.samples == tuple(original)
    sent = len(llm_server.requests)

    assert main(["run", "agent", "--replay", run.id, "--quiet"]) == 0, capsys.readouterr().err

    assert len(llm_server.requests) == sent  # the loop replayed from the stored steps
    replayed = samples_of(project, "loop")
    assert [s.steps for s in replayed] == [s.steps for s in original]
    assert [s.verdict for s in replayed] == [s.verdict for s in original]


@pytest.mark.parametrize("model", ["fake", "fake-anthropic"])
def test_a_response_format_is_sent_natively_and_is_json_checks_against_it(
    project: Path, llm_server: LoopbackLLMServer, model: str
) -> None:
    schema = {
        "type": "object",
        "properties": {"status": {"const": "ok"}, "total_idr": {"type": "integer"}},
        "required": ["status", "total_idr"],
    }
    folder = project / "extract"
    (folder / "schemas").mkdir(parents=True)
    (folder / "schemas" / "invoice.json").write_text(json.dumps(schema), "utf-8")
    (folder / "system.txt").write_text("Extract the invoice.", "utf-8")
    (folder / "suite.yaml").write_text(
        f"name: extract\nprompt: {{system: system.txt, user: '{{{{q}}}}'}}\nmodel: {model}\n"
        "samples: 1\nresponse_format: {json_schema: file://schemas/invoice.json, strict: true}\n",
        "utf-8",
    )
    (folder / "inv.yaml").write_text(
        f"id: inv\n{PROVENANCE}vars: {{q: 'Invoice 12.5M'}}\nassert:\n  - type: is-json\n", "utf-8"
    )

    assert main(["run", "extract", "--quiet"]) == 0

    (request,) = llm_server.requests
    if model == "fake":
        assert request.body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "response", "schema": schema, "strict": True},
        }
    else:
        assert request.body["tool_choice"] == {"type": "tool", "name": "response"}
        assert request.body["tools"][0]["input_schema"] == schema
    (sample,) = samples_of(project, "inv")
    assert json.loads(sample.output)["total_idr"] == 12500000
    assert sample.tool_calls == ()  # the response tool is the answer, not a call


@pytest.mark.parametrize("model", ["fake", "fake-anthropic"])
def test_a_conversation_with_an_image_is_sent_in_each_wire_format(
    project: Path, llm_server: LoopbackLLMServer, model: str
) -> None:
    agent_suite(
        project,
        {
            "photo": """\
            messages:
              - {role: system, content: Be kind.}
              - {role: user, content: Hi}
              - {role: assistant, content: Hello! How can I help?}
              - role: user
                content:
                  - "This receipt, for {{who}}: MODE:echo"
                  - {image: file://photos/receipt.png}
            vars: {who: Ana}
            assert:
              - {type: contains, value: receipt}
            """
        },
        model=model,
        files={"photos/receipt.png": PNG},
    )

    assert main(["run", "agent", "--quiet"]) == 0

    body = llm_server.requests[0].body
    encoded = base64.b64encode(PNG).decode()
    if model == "fake":
        assert [m["role"] for m in body["messages"]] == [
            "system",
            "system",
            "user",
            "assistant",
            "user",
        ]
        assert body["messages"][-1]["content"] == [
            {"type": "text", "text": "This receipt, for Ana: MODE:echo"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{encoded}"}},
        ]
    else:
        assert body["system"] == "You are the refunds agent.\n\n\nBe kind."
        assert [m["role"] for m in body["messages"]] == ["user", "assistant", "user"]
        assert body["messages"][-1]["content"][1] == {
            "type": "image",
            "source": {"type": "base64", "media_type": "image/png", "data": encoded},
        }


def test_the_embedded_model_is_refused_an_image_before_any_request(
    project: Path, llm_server: LoopbackLLMServer, capsys: pytest.CaptureFixture[str]
) -> None:
    write_config(project, llm_server, models='tiny = "local:smollm2-135m-instruct-q4_1"')
    agent_suite(
        project,
        {
            "photo": "messages:\n  - role: user\n    content: [{image: file://r.png}]\n"
            "assert:\n  - {type: contains, value: total}\n"
        },
        model="tiny",
        files={"r.png": PNG},
    )

    assert main(["run", "agent", "--quiet"]) == 2

    err = capsys.readouterr().err
    assert "agent/photo" in err and "image" in err
    assert "local:smollm2-135m-instruct-q4_1" in err and "provider 'local'" in err
    db = project / ".redline" / "redline.db"
    if db.exists():
        with RunStore.open(db) as store:
            assert store.latest_run(kind=None) is None


def test_messages_tools_formats_and_images_are_inputs_of_the_manifest(project: Path) -> None:
    from redline.running.manifest import case_hash, suite_manifest
    from redline.suite.cases import load_suite

    folder = agent_suite(
        project,
        {
            "photo": "messages:\n  - role: user\n    content: [{image: file://r.png}]\n"
            "assert: [{type: no-tool-call}]\n"
        },
        extra="messages: [{role: user, content: Hi}, {role: assistant, content: Hello}]\n",
        files={"r.png": PNG},
    )
    before = load_suite(folder)
    manifest = suite_manifest(before, "m")
    assert "agent/@prompt.conversation" in manifest
    assert "agent/tools/support.json" in manifest and "agent/r.png" in manifest
    photo_hash = case_hash(before.case("photo"))

    tools = json.loads((folder / "tools" / "support.json").read_text())
    tools[0]["function"]["description"] = "Find an order by its number"
    (folder / "tools" / "support.json").write_text(json.dumps(tools))
    (folder / "r.png").write_bytes(PNG + b"\x00")
    after = load_suite(folder)
    changed = {k for k, v in suite_manifest(after, "m").items() if manifest.get(k) != v}

    assert {"agent/@prompt.conversation", "agent/tools/support.json", "agent/r.png"} <= changed
    assert case_hash(after.case("photo")) != photo_hash
