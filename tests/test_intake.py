"""Cases from production: each trace format becomes a case that validates and runs; a
table imports with bad rows refused by row number."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from exampleapp import write_app
from redline.cli import main
from redline.config import load_config
from redline.suite.cases import load_suite
from servers import LoopbackLLMServer
from test_targets import run

QUESTION = "How long does a refund take?"
ANSWER = "Refunds are paid within 14 days."
OPENAI = {
    "request": {
        "model": "gpt-4.1-2025-04-14",
        "messages": [{"role": "user", "content": QUESTION}],
        "metadata": {"question": QUESTION, "tone": "formal"},
    },
    "response": {
        "id": "chatcmpl-77",
        "created": 1767225600,
        "model": "gpt-4.1-2025-04-14",
        "choices": [{"message": {"role": "assistant", "content": ANSWER}}],
    },
}
ANTHROPIC = {
    "request": {
        "model": "claude-x-20260101",
        "system": "Be brief.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": QUESTION}]}],
    },
    "response": {"id": "msg_01", "type": "message", "content": [{"type": "text", "text": ANSWER}]},
}


def _attr(key: str, value: str) -> dict[str, object]:
    return {"key": key, "value": {"stringValue": value}}


OTLP = {
    "resourceSpans": [
        {
            "scopeSpans": [
                {
                    "spans": [
                        {
                            "traceId": "5b8efff798038103d269b633813fc60c",
                            "name": "chat gpt-4.1",
                            "startTimeUnixNano": "1767225600000000000",
                            "attributes": [
                                _attr("gen_ai.request.model", "gpt-4.1-2025-04-14"),
                                _attr(
                                    "gen_ai.input.messages",
                                    json.dumps(
                                        [
                                            {
                                                "role": "user",
                                                "parts": [{"type": "text", "content": QUESTION}],
                                            }
                                        ]
                                    ),
                                ),
                                _attr(
                                    "gen_ai.output.messages",
                                    json.dumps(
                                        [
                                            {
                                                "role": "assistant",
                                                "parts": [{"type": "text", "content": ANSWER}],
                                            }
                                        ]
                                    ),
                                ),
                            ],
                        }
                    ]
                }
            ]
        }
    ]
}


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("openai.json", json.dumps(OPENAI)),
        ("log.jsonl", json.dumps(OPENAI) + "\n" + json.dumps(OPENAI) + "\n"),
        ("anthropic.json", json.dumps(ANTHROPIC)),
        ("spans.json", json.dumps(OTLP)),
    ],
)
def test_each_trace_format_becomes_a_case_that_validates_and_runs(
    tmp_path: Path,
    llm_server: LoopbackLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    text: str,
) -> None:
    monkeypatch.setenv("LOOPBACK_BASE_URL", llm_server.openai_base_url)
    suite = write_app(tmp_path)
    (suite / "refund-window.yaml").unlink()
    trace = tmp_path / name
    trace.write_text(text, encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["case", "new", "--from", str(trace), "--suite", str(suite)]) == 0
    written = sorted(suite.glob("*.yaml"))
    cases = [p for p in written if p.name != "suite.yaml"]
    assert len(cases) == (2 if name.endswith("jsonl") else 1)
    loaded = load_suite(suite, load_config(suite))
    case = loaded.cases[0]
    assert case.golden == ANSWER
    assert case.provenance["source"] == str(trace)
    assert QUESTION in "".join(m.text for m in case.messages)
    assert main(["validate", str(suite)]) == 0
    _record, samples = run(suite)
    assert samples and all(s.error is None for s in samples), [s.error for s in samples]


def test_the_known_bad_answer_becomes_a_check_not_a_golden(tmp_path: Path) -> None:
    suite = write_app(tmp_path)
    trace = tmp_path / "bad.json"
    trace.write_text(json.dumps(OPENAI), encoding="utf-8")
    assert main(["case", "new", "--from", str(trace), "--suite", str(suite), "--bad"]) == 0
    case = load_suite(suite, load_config(suite)).case("chatcmpl-77")
    assert case.golden is None
    assert any(a.type_name == "not-contains" for a in case.assertions)
    assert case.vars == {"question": QUESTION, "tone": "formal"}


def test_a_table_imports_and_bad_rows_are_refused_by_number(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    suite = write_app(tmp_path)
    table = tmp_path / "data.csv"
    table.write_text(
        "ticket,q,answer\nT-1,Where is my parcel?,It ships in 2 days\n"
        "T-1,duplicate id,x\nT-3,Refund?,Paid in 14 days\n",
        encoding="utf-8",
    )
    code = main(
        [
            "cases",
            "import",
            str(table),
            "--suite",
            str(suite),
            "--map",
            "id=ticket",
            "--map",
            "vars.question=q",
            "--map",
            "golden=answer",
            "--map",
            "provenance.ticket=ticket",
        ]
    )
    out = capsys.readouterr().out
    assert code == 2
    assert "row 2 refused: id 't-1' is used by an earlier row" in out
    loaded = load_suite(suite, load_config(suite))
    assert {c.id for c in loaded.cases} == {"refund-window", "t-1", "t-3"}
    assert loaded.case("t-3").golden == "Paid in 14 days"
    rows = tmp_path / "rows.jsonl"
    rows.write_text('{"id": "a", "topic": "x"}\n', encoding="utf-8")
    # a var the suite's checks do not need is fine; a missing column is refused with its row
    code = main(["cases", "import", str(rows), "--suite", str(suite), "--map", "vars.q=question"])
    assert code == 2 and "row 1 refused: no column question" in capsys.readouterr().out


def test_genai_content_events_and_a_map_written_column_first(tmp_path: Path) -> None:
    suite = write_app(tmp_path)
    prompt = json.dumps([{"role": "user", "content": QUESTION}])
    completion = json.dumps([{"role": "assistant", "content": ANSWER}])
    span = {
        "traceId": "abc123",
        "attributes": [_attr("gen_ai.system", "openai")],
        "events": [
            {"name": "gen_ai.content.prompt", "attributes": [_attr("gen_ai.prompt", prompt)]},
            {
                "name": "gen_ai.content.completion",
                "attributes": [_attr("gen_ai.completion", completion)],
            },
        ],
    }
    trace = tmp_path / "events.json"
    trace.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": [span]}]}]}))
    assert main(["case", "new", "--from", str(trace), "--suite", str(suite)]) == 0
    case = load_suite(suite, load_config(suite)).case("abc123")
    assert case.golden == ANSWER and case.messages[0].text == QUESTION
    table = tmp_path / "rows.jsonl"
    table.write_text('{"ticket": "R-9", "q": "Refund?"}\n', encoding="utf-8")
    args = ["cases", "import", str(table), "--suite", str(suite), "--map", "ticket=id"]
    assert main([*args, "--map", "q=vars.question"]) == 0
    assert load_suite(suite, load_config(suite)).case("r-9").vars == {"question": "Refund?"}
