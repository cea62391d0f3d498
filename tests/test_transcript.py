"""Tool calls and loops read the same everywhere: Step 2, `show`, search, HTML, JUnit, and
the golden answer a baseline keeps."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from casefiles import CASE_HEAD, write_suite
from redline.cli import main
from redline.deciding.baseline import baseline_case, golden_reference
from redline.report import build_run_report
from redline.report.html import html_report
from redline.report.junit import junit_xml
from redline.running.search import search_run
from redline.suite.cases import load_suite
from redline.transcript import (
    answer_text,
    conversation_entries,
    entries_text,
    is_conversation,
    transcript_text,
)
from redline.vocabulary.completion import FinishReason
from redline.vocabulary.messages import (
    ImagePart,
    Message,
    Role,
    Step,
    TextPart,
    ToolCall,
    ToolResult,
)
from runfactory import OK, WRONG, CaseSpec, RunSpec, open_store, write_config, write_run

REFUND = ToolCall("call_9", "issue_refund", '{"order": "A-17", "reason": "<script>退款</script>"}')
LOOKUP = ToolCall("call_1", "lookup_order", '{"order": "A-17"}')
LOOP = (
    Step("", FinishReason.TOOL_CALLS, (LOOKUP,), (ToolResult("call_1", "lookup_order", "late"),)),
    Step("", FinishReason.TOOL_CALLS, (REFUND,), (ToolResult("call_9", "issue_refund", "done"),)),
    Step("Your refund is on its way.", FinishReason.STOP),
)


def _tool_run(tmp_path: Path) -> None:
    with open_store(tmp_path) as store:
        case = CaseSpec(
            "refund",
            [WRONG, OK],
            required=2,
            outputs=["", "Your refund is on its way."],
            tool_calls=[(REFUND,), ()],
            steps=[(), LOOP],
        )
        write_run(store, RunSpec("tools1", [case, CaseSpec("plain", [OK], outputs=["hello"])]))


def test_a_plain_answer_is_its_output_character_for_character() -> None:
    assert answer_text("exactly\r\n as stored ", ()) == "exactly\r\n as stored "


def test_an_answer_lists_each_call_with_pretty_arguments() -> None:
    text = answer_text("One moment.", (LOOKUP, ToolCall("c2", "broken", '{"a": ')))
    assert text.splitlines()[:4] == [
        "One moment.",
        "tool call lookup_order (id call_1)",
        "{",
        '  "order": "A-17"',
    ]
    assert 'tool call broken (id c2)\n{"a": \n(arguments are not JSON' in text


def test_a_conversation_names_roles_calls_results_and_images() -> None:
    sent = (
        Message(Role.SYSTEM, "You are support."),
        Message(Role.USER, (TextPart("Where is it?"), ImagePart("image/png", b"\x89PNG", "r.png"))),
        Message(Role.ASSISTANT, "", tool_calls=(LOOKUP,)),
        Message(Role.TOOL, '{"status": "late"}', tool_call_id="call_1"),
        Message(Role.USER, "So?"),
    )
    text = entries_text(conversation_entries(sent))
    assert text.startswith("── system ──\nYou are support.\n── user ──\nWhere is it?\n[image r.png")
    assert "── assistant ──\ntool call lookup_order (id call_1)" in text
    assert '── tool (answers call_1) ──\n{"status": "late"}' in text
    assert is_conversation(sent)
    assert not is_conversation((Message(Role.SYSTEM, "s"), Message(Role.USER, "u")))


def test_search_finds_tool_names_and_arguments_in_any_script(tmp_path: Path) -> None:
    _tool_run(tmp_path)
    with open_store(tmp_path) as store:
        hits = search_run(store, "tools1", "issue_refund")
        assert [(h.case_id, h.index, h.found_in) for h in hits] == [
            ("refund", 0, "tool call"),
            ("refund", 1, "tool call"),  # called inside the loop's second step
        ]
        assert [h.index for h in search_run(store, "tools1", "退款")] == [0, 1]
        assert [h.index for h in search_run(store, "tools1", "lookup_order")] == [1]


def test_html_and_junit_show_calls_and_steps_escaped(tmp_path: Path) -> None:
    _tool_run(tmp_path)
    with open_store(tmp_path) as store:
        report = build_run_report(store, "tools1")
    page = html_report(report)
    assert "<script>" not in page
    assert "tool call issue_refund (id call_9)" in page
    assert "&lt;script&gt;退款&lt;/script&gt;" in page
    assert "── tool result lookup_order (answers call_1) ──" in page
    out = "".join(e.text or "" for e in ET.fromstring(junit_xml(report)).iter("system-out"))
    assert "tool call issue_refund" in out


def test_show_prints_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _tool_run(tmp_path)
    write_config(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["show", "tools1", "refund"]) == 0
    out = capsys.readouterr().out
    assert "── assistant, step 3 of 3 (finish stop) ──" in out
    assert "ended after 3 request(s): the model answered" in out


def test_a_baseline_golden_of_a_tool_answer_keeps_its_calls(tmp_path: Path) -> None:
    _tool_run(tmp_path)
    with open_store(tmp_path) as store:
        record = next(c for c in store.cases("tools1") if c.case_id == "refund")
        sample = store.samples("tools1", "refund", record.suite)[1]
        ok_only = [sample]
        entry = baseline_case(record, ok_only)
    assert entry.golden is not None
    assert entry.golden.output == "Your refund is on its way."
    assert transcript_text(sample).count("── assistant") == 3


OPENAI_TURN = json.dumps(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_a",
                "type": "function",
                "function": {"name": "issue_refund", "arguments": '{"order_id": "A-1"}'},
            }
        ],
    }
)
ANTHROPIC_TURN = json.dumps(
    {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Refunding."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "issue_refund",
                "input": {"order_id": "A-1"},
            },
        ],
    }
)


@pytest.mark.parametrize(
    ("golden", "expected"),
    [
        (OPENAI_TURN, 'tool call issue_refund\n{\n  "order_id": "A-1"\n}'),
        (ANTHROPIC_TURN, 'Refunding.\ntool call issue_refund\n{\n  "order_id": "A-1"\n}'),
        ('{"total": 12000}\n', '{"total": 12000}\n'),  # an output that is JSON stays verbatim
    ],
    ids=["openai-turn", "anthropic-turn", "json-output"],
)
def test_a_golden_assistant_turn_reads_as_the_answer_it_describes(
    tmp_path: Path, golden: str, expected: str
) -> None:
    folder = write_suite(
        tmp_path,
        {
            "c1.yaml": CASE_HEAD
            + "golden: file://golden.json\nassert:\n  - {type: contains, value: x}\n"
        },
        files={"golden.json": golden},
    )
    (case,) = load_suite(folder).cases
    assert case.golden == golden  # the case keeps its golden verbatim
    assert golden_reference(None, case.id, case.golden).text == expected
