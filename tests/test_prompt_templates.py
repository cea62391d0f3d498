"""Prompts rendered as the app renders them: Jinja (sandboxed, strict) with loops,
conditionals and includes; plain `{{var}}` prompts unchanged; problems at file:line."""

from __future__ import annotations

from pathlib import Path

import pytest

from casefiles import write_suite
from redline.errors import ProblemsError
from redline.suite.cases import load_suite

CASE = """\
id: one
provenance: {ticket: T-1}
vars: {customer: Ada, plan: pro}
assert:
  - {type: contains, value: x}
"""

SUITE = """\
name: demo
prompt:
  system: system.j2
  user: "Hello {{customer}}"
model: local
"""


def _suite(tmp_path: Path, system: str, files: dict[str, str | bytes] | None = None) -> Path:
    folder = write_suite(tmp_path, {"one.yaml": CASE}, SUITE, files=files)
    (folder / "system.j2").write_text(system, encoding="utf-8")
    return folder


def test_a_jinja_prompt_renders_loops_conditionals_and_includes(tmp_path: Path) -> None:
    folder = _suite(
        tmp_path,
        "{% include 'rules.j2' %}\n{% for n in range(2) %}[{{ n }}]{% endfor %}\n"
        "{% if plan == 'pro' %}Priority for {{ customer | upper }}{% endif %}\n",
        files={"rules.j2": "Rule: be kind."},
    )
    suite = load_suite(folder)
    system, user = suite.render(suite.cases[0])
    assert system == "Rule: be kind.\n[0][1]\nPriority for ADA\n"
    assert user == "Hello Ada"
    assert folder / "rules.j2" in suite.prompt_files


def test_an_undefined_variable_is_reported_at_the_template_line(tmp_path: Path) -> None:
    folder = _suite(tmp_path, "line one\n{% if plan %}\n{{ customer.nickname }}\n{% endif %}\n")
    with pytest.raises(ProblemsError) as raised:
        load_suite(folder)
    shown = [str(p) for p in raised.value.problems]
    assert any("system.j2:3:" in p and "has no attribute 'nickname'" in p for p in shown), shown
    (folder / "system.j2").write_text("{{ account }}", encoding="utf-8")
    with pytest.raises(ProblemsError) as raised:
        load_suite(folder)
    assert "one.yaml:3:1: the suite prompt uses {{account}}" in str(raised.value.problems[0])


def test_a_template_syntax_error_is_reported_at_its_line(tmp_path: Path) -> None:
    folder = _suite(tmp_path, "ok\nok\n{% for x in %}\n")
    with pytest.raises(ProblemsError) as raised:
        load_suite(folder)
    shown = [str(p) for p in raised.value.problems]
    assert any("system.j2:3:" in p and "template syntax error" in p for p in shown), shown


def test_the_sandbox_refuses_reaching_into_python(tmp_path: Path) -> None:
    folder = _suite(tmp_path, "{{ customer.__class__.__mro__ }}")
    with pytest.raises(ProblemsError) as raised:
        load_suite(folder)
    assert "unsafe" in str(raised.value.problems[0]).lower() or "undefined" in str(
        raised.value.problems[0]
    )


def test_a_plain_placeholder_prompt_is_filled_verbatim(tmp_path: Path) -> None:
    folder = write_suite(tmp_path, {"one.yaml": CASE}, SUITE.replace("system.j2", "system.txt"))
    (folder / "system.txt").write_text("Dear {{customer}}, {{ plan }}: {not jinja}", "utf-8")
    suite = load_suite(folder)
    assert suite.render(suite.cases[0])[0] == "Dear Ada, pro: {not jinja}"


def test_a_jinja_message_renders_and_its_problem_names_the_message(tmp_path: Path) -> None:
    suite_yaml = "name: demo\nprompt: {system: system.txt}\nmodel: local\n"
    case = (
        "id: one\nprovenance: {ticket: T-1}\nvars: {customer: Ada}\nmessages:\n"
        '  - {role: user, content: "{% if customer %}Hi {{ customer | lower }}{% endif %}"}\n'
        "assert:\n  - {type: contains, value: x}\n"
    )
    folder = write_suite(tmp_path, {"one.yaml": case}, suite_yaml)
    suite = load_suite(folder)
    assert suite.turns(suite.cases[0])[0].text == "Hi ada"
    (folder / "one.yaml").write_text(case.replace("customer | lower", "customer.age"), "utf-8")
    with pytest.raises(ProblemsError) as raised:
        load_suite(folder)
    shown = str(raised.value.problems[0])
    assert "one.yaml:1:1: message 1 of the conversation" in shown and "'age'" in shown
