"""docs/conversations.md's examples are what redline accepts: each one, read by the loader
in a suite like the refund agent's (its tools, fixtures, a schema and a photo)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from redline.suite.cases import load_suite

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "docs" / "conversations.md").read_text(encoding="utf-8")
HEAD = "provenance: {ticket: DOC-1, note: docs}\n"
JPEG = bytes.fromhex("ffd8ffe000104a46494600010100000100010000ffd9")


def test_every_example_of_the_conversations_page_loads(tmp_path: Path) -> None:
    examples = re.findall(r"```yml\n(.*?)```", PAGE, flags=re.DOTALL)
    suite_part = [e for e in examples if e.startswith("# suite.yaml")]
    cases = [e for e in examples if e.startswith("id:")]
    fragments = [e for e in examples if e not in suite_part + cases]
    assert len(suite_part) == 1 and len(cases) == 1 and len(fragments) == 3
    folder = tmp_path / "agent"
    shutil.copytree(ROOT / "cases" / "refund-agent", folder)
    for case in folder.glob("*.yaml"):
        if case.name != "suite.yaml":
            case.unlink()
    (folder / "schemas").mkdir()
    (folder / "schemas" / "invoice.json").write_text('{"type": "object"}')
    (folder / "photos").mkdir()
    (folder / "photos" / "receipt.jpg").write_bytes(JPEG)
    suite_yaml = (folder / "suite.yaml").read_text()
    suite_yaml = re.sub(r"^(tools|tool_choice):.*\n", "", suite_yaml, flags=re.MULTILINE)
    (folder / "suite.yaml").write_text(suite_yaml + suite_part[0])
    (folder / "doc-case.yaml").write_text(cases[0])
    for i, fragment in enumerate(fragments):
        turn = "" if "messages:" in fragment else "messages: [{role: user, content: hi}]\n"
        (folder / f"fragment-{i}.yaml").write_text(
            f"id: fragment-{i}\n{HEAD}{turn}{fragment}assert: [{{type: max-words, value: 99}}]\n"
        )

    suite = load_suite(folder)

    assert [t.name for t in suite.tools] == ["lookup_order", "issue_refund"]
    conversation = suite.case("0301-fourth-turn-refund-claim")
    assert [m.role.value for m in conversation.messages][-1] == "user"
    assert conversation.messages[1].tool_calls[0].id == "call_lk_1"
    assert suite.case("fragment-0").tool_results[0].match == {"order_id": "A-1042"}
    assert suite.case("fragment-1").response_format is not None
    assert suite.case("fragment-2").messages[0].images[0].media_type == "image/jpeg"
