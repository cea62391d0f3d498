"""`redline validate` on conversation and tool cases: every problem at its file:line:col
(in the case file, or inside the JSON file it names), with a hint, all listed at once."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redline.cli import main

PROVENANCE = "provenance: {ticket: SUP-9, reported: 2026-03-01, note: refund agent}\n"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "lookup_order",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        },
    }
]
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c63f8cfc0f01f0003860180d6a3c5a40000000049454e44ae426082"
)


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "redline.toml").write_text('[models]\nlocal = "local:smollm2-135m-instruct-q4_1"\n')
    monkeypatch.chdir(tmp_path)
    suite = tmp_path / "cases" / "agent"
    (suite / "tools").mkdir(parents=True)
    (suite / "tools" / "support.json").write_text(json.dumps(TOOLS, indent=2))
    (suite / "system.txt").write_text("You are the refunds agent.")
    (suite / "suite.yaml").write_text(
        "name: agent\nprompt: {system: system.txt}\nmodel: local\n"
        "tools: file://tools/support.json\n"
    )
    return tmp_path


def write_case(project: Path, name: str, body: str) -> None:
    (project / "cases" / "agent" / f"{name}.yaml").write_text(
        f"id: {name}\n{PROVENANCE}{body}assert: [{{type: no-tool-call}}]\n"
    )


def problems(project: Path, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["validate"]) == 2
    return capsys.readouterr().err


def test_a_good_agent_case_validates(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (project / "cases" / "agent" / "photos").mkdir()
    (project / "cases" / "agent" / "photos" / "r.png").write_bytes(PNG)
    write_case(
        project,
        "good",
        "messages:\n"
        "  - role: user\n    content: [Here is my receipt, {image: file://photos/r.png}]\n"
        "tool_results: [{tool: lookup_order, content: delivered}]\n",
    )
    assert main(["validate"]) == 0, capsys.readouterr().err


def test_conversation_mistakes_are_each_reported_where_they_are(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    write_case(project, "a-role", "messages:\n  - {role: customer, content: hi}\n")
    write_case(
        project,
        "b-call",
        "messages:\n"
        "  - {role: user, content: hi}\n"
        "  - role: assistant\n"
        "    tool_calls: [{function: {name: lookup_order, arguments: '{}'}}]\n",
    )
    write_case(
        project,
        "c-answer",
        "messages:\n  - {role: user, content: hi}\n"
        "  - {role: tool, tool_call_id: call_7, content: delivered}\n",
    )
    write_case(
        project,
        "d-fixture",
        "messages: [{role: user, content: hi}]\n"
        "tool_results:\n  - {tool: issue_refund, content: done}\n",
    )
    write_case(
        project,
        "e-image",
        "messages:\n  - role: user\n    content: [{image: file://photos/missing.jpg}]\n",
    )
    (project / "cases" / "agent" / "notes.txt").write_text("not a picture")
    write_case(
        project, "f-image", "messages:\n  - role: user\n    content: [{image: file://notes.txt}]\n"
    )

    err = problems(project, capsys)

    assert "cases/agent/a-role.yaml:4:12: unknown role 'customer' (did you mean 'user'?)" in err
    assert "a message's role is one of system, user, assistant, tool" in err
    assert "cases/agent/b-call.yaml:6:18: a tool_calls entry has no `id`" in err
    assert "cases/agent/c-answer.yaml:5:5: this tool message answers call 'call_7'" in err
    assert (
        "cases/agent/d-fixture.yaml:5:12: tool_results answers 'issue_refund', which the "
        "suite does not declare (declared: lookup_order)" in err
    )
    assert (
        "cases/agent/e-image.yaml:5:23: image cases/agent/photos/missing.jpg does not exist" in err
    )
    assert "cases/agent/f-image.yaml:5:23: cases/agent/notes.txt is not an image" in err
    assert "6 problem(s) found" in err


def test_a_tools_file_that_is_not_json_is_reported_inside_it(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "agent" / "tools" / "support.json").write_text(
        '[\n  {"type": "function",\n'
    )
    write_case(project, "a", "messages: [{role: user, content: hi}]\n")

    err = problems(project, capsys)

    # At the suite's `tools:` key, naming the line and column inside the JSON file.
    assert (
        "cases/agent/suite.yaml:4:8: cases/agent/tools/support.json:3:1: not valid JSON: "
        "Expecting property name" in err
    )


def test_parameters_that_are_no_json_schema_are_reported_at_the_tool(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = [{"type": "function", "function": {"name": "x", "parameters": {"type": "objekt"}}}]
    (project / "cases" / "agent" / "tools" / "support.json").write_text(json.dumps(bad, indent=2))
    write_case(project, "a", "messages: [{role: user, content: hi}]\n")

    err = problems(project, capsys)

    assert (
        "cases/agent/suite.yaml:4:8: cases/agent/tools/support.json, tool 1: tool 'x' "
        "parameters is not a JSON Schema: at type:" in err
    )


def test_a_transcript_file_in_jsonl_with_a_bad_line_names_the_line(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (project / "cases" / "agent" / "chat.jsonl").write_text(
        '{"role": "user", "content": "hi"}\n\n{"role": "assistant", "content": "hello"\n'
    )
    write_case(project, "a", "messages: file://chat.jsonl\n")

    err = problems(project, capsys)

    assert "cases/agent/a.yaml:3:11: cases/agent/chat.jsonl:3:" in err
    assert "not a JSON message" in err
